// A bias-free linear layer whose backward can be split in two, for zero-bubble pipeline
// schedules (Qi et al. 2024, "Zero Bubble Pipeline Parallelism"):
//  - B, the full backward: `loss.backward()` or `output.backward(grad)` with no stash active;
//    every parameter gets its gradient.
//  - I, the input half: the same call with a WeightGradStash active (StashGuard). Every split
//    linear layer returns its input gradient as usual but, instead of computing its weight
//    gradient, records (input, grad_output, weight) in the stash. The autograd graph is freed as
//    usual (no retain_graph needed): the stash holds what W needs.
//  - W, the weight half: WeightGradStash::apply() computes each deferred weight gradient and
//    accumulates it into the weight's .grad().
//
// Only the split linear weights are deferred. Other parameters (RMSNorm weights, the token
// embedding) get their gradients immediately during I, exactly as during B; their cost is
// element-wise and small. Gradient hooks registered on a linear weight do not fire for the
// deferred part (apply() writes .grad() directly).
//
// The active stash is a thread-local pointer read by the backward functions, so it reaches them
// when they run on the thread that called backward(). That is always the case for CPU tensors;
// for CUDA tensors LibTorch's autograd engine runs backward functions on its per-device worker
// threads, which do not see the caller's pointer (a CUDA port must carry it there, for example
// through at::ThreadLocalState).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtwin::nn {

/// The deferred weight gradients of one I (input-gradient) pass, applied later by W.
class WeightGradStash {
 public:
  /// Records one deferred weight gradient dW = grad_outputᵀ · input of y = input · weightᵀ.
  /// input [..., in], grad_output [..., out] (same leading dims), weight [out, in], a leaf.
  void record(torch::Tensor input, torch::Tensor grad_output, torch::Tensor weight);
  /// Computes every recorded dW [out, in] = grad_output[N, out]ᵀ · input[N, in] over the flattened
  /// leading dims N, accumulates it into weight.mutable_grad() (setting it when undefined), under
  /// no-grad, in recording order; then clears the stash.
  void apply();
  /// Drops the recorded entries without applying them.
  void clear() { entries_.clear(); }
  bool empty() const { return entries_.empty(); }
  /// Number of recorded (deferred) weight gradients.
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    torch::Tensor input, grad_output, weight;
  };
  std::vector<Entry> entries_;
};

/// Makes `stash` the calling thread's active stash (nullptr: none, full backward) and returns the
/// previous one.
WeightGradStash* set_active_stash(WeightGradStash* stash);
/// The calling thread's active stash, or nullptr.
WeightGradStash* active_stash();

/// RAII: makes `stash` (may be nullptr) the active stash for its lifetime, then restores the
/// previous one.
class StashGuard {
 public:
  explicit StashGuard(WeightGradStash* stash) : previous_(set_active_stash(stash)) {}
  ~StashGuard() { set_active_stash(previous_); }
  StashGuard(const StashGuard&) = delete;
  StashGuard& operator=(const StashGuard&) = delete;

 private:
  WeightGradStash* previous_;
};

/// y [..., out] = input [..., in] · weightᵀ (weight [out, in]), through a custom autograd function
/// whose backward returns grad_input = grad_y · weight and, unless a stash is active (see the file
/// comment), grad_weight = grad_yᵀ · input.
torch::Tensor split_linear(const torch::Tensor& input, const torch::Tensor& weight);

/// A bias-free linear layer with one parameter "weight" [out_features, in_features], created
/// uninitialised (see init_parameters in models/param_init.hpp) with `options` (device, dtype).
class SplitLinearImpl : public torch::nn::Module {
 public:
  SplitLinearImpl(std::int64_t in_features, std::int64_t out_features,
                  const torch::TensorOptions& options);
  /// input [..., in_features] -> [..., out_features].
  torch::Tensor forward(const torch::Tensor& input);

  torch::Tensor weight;
};
TORCH_MODULE(SplitLinear);

}  // namespace dtwin::nn
