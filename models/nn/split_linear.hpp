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
// The active stash lives in a StashSlot that the layers share (StageModule gives all of its layers
// one) and that each forward records in its autograd node, so a backward function finds it on
// whichever thread the autograd engine runs it: the caller's for CPU tensors, LibTorch's
// per-device worker threads for CUDA tensors.
//
// Under mixed precision the weight stays in its own dtype (the fp32 master weight) and the layer
// computes in the input's dtype (bf16): the forward and the input gradient use a cast copy of the
// weight, and the weight gradient, computed in the input's dtype, is cast to the weight's dtype
// before it is accumulated into .grad() (as Megatron-LM's fp32 main_grad).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>

#include "models/nn/weight_grad_stash.hpp"

namespace dtwin::nn {

struct Fp8Scaling;

/// y [..., out] = input [..., in] · weightᵀ (weight [out, in]) in input's dtype, through a custom
/// autograd function whose backward returns grad_input = grad_y · weight and, unless `slot` (which
/// must outlive the graph) holds an active stash when it runs, grad_weight = grad_yᵀ · input in
/// weight's dtype.
torch::Tensor split_linear(const torch::Tensor& input, const torch::Tensor& weight,
                           StashSlot& slot);

/// A bias-free linear layer with one parameter "weight" [out_features, in_features], created
/// uninitialised (see init_parameters in models/nn/param_init.hpp) with `options` (device, dtype),
/// computing in its input's dtype. `slot` starts as the layer's own; StageModule points all of
/// its layers at one. With `fp8` set (StageModule::use_fp8) it multiplies in fp8 GEMMs with a
/// bf16 result instead (fp8_linear, models/nn/fp8_linear.hpp).
class SplitLinearImpl : public torch::nn::Module {
 public:
  SplitLinearImpl(std::int64_t in_features, std::int64_t out_features,
                  const torch::TensorOptions& options);
  /// input [..., in_features] -> [..., out_features].
  torch::Tensor forward(const torch::Tensor& input);

  torch::Tensor weight;
  std::shared_ptr<StashSlot> slot = std::make_shared<StashSlot>();
  std::shared_ptr<Fp8Scaling> fp8;
};
TORCH_MODULE(SplitLinear);

}  // namespace dtwin::nn
