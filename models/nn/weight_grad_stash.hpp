// The weight-gradient stash of zero-bubble pipeline schedules (Qi et al. 2024): what a split
// backward's I pass records for its W pass (models/nn/split_linear.hpp explains the split), the
// slot through which the layers' backward functions find the active stash, and its guard.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <vector>

namespace dtwin::nn {

/// grad_output [..., out], input [..., in] -> the weight gradient grad_outputᵀ · input [out, in]
/// over the flattened leading dims, computed in grad_output's dtype and returned in `dtype`.
torch::Tensor weight_gradient(const torch::Tensor& input, const torch::Tensor& grad_output,
                              torch::ScalarType dtype);

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

/// Where the backward of the split linear layers that share it finds the active stash (nullptr:
/// none, full backward). Set it with StashGuard around a backward() call.
struct StashSlot {
  WeightGradStash* active = nullptr;
};

/// RAII: makes `stash` (may be nullptr) `slot`'s active stash for its lifetime, then restores the
/// previous one.
class StashGuard {
 public:
  StashGuard(StashSlot& slot, WeightGradStash* stash) : slot_(slot), previous_(slot.active) {
    slot.active = stash;
  }
  ~StashGuard() { slot_.active = previous_; }
  StashGuard(const StashGuard&) = delete;
  StashGuard& operator=(const StashGuard&) = delete;

 private:
  StashSlot& slot_;
  WeightGradStash* previous_;
};

}  // namespace dtwin::nn
