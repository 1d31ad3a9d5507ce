// AdamW in one fused ATen kernel per step (at::_fused_adamw_, the kernel behind PyTorch's
// torch.optim.AdamW(fused=True), on the CPU and on CUDA) instead of LibTorch's per-parameter loop
// of about ten element-wise kernels per parameter: on a GPU those launches, not the arithmetic,
// set the optimizer step's time for a small model.
#pragma once

#include <torch/optim/adamw.h>

#include <map>
#include <vector>

namespace dtwin::rt {

/// torch::optim::AdamW with the same options, parameter state (AdamWParamState: exp_avg,
/// exp_avg_sq, step) and checkpoints, whose step() updates every parameter of a group with a
/// gradient through one at::_fused_adamw_ call (Loshchilov & Hutter 2019, "Decoupled Weight
/// Decay Regularization", algorithm 2, as torch.optim.AdamW computes it). The kernel reads each
/// parameter's step count from a float32 tensor on the parameter's device, which this class
/// keeps beside AdamWParamState::step, adds one to before each step (one _foreach_add_), and
/// refills when the state's count changed under it (a loaded checkpoint). Throws c10::Error for
/// amsgrad, which it does not implement.
class FusedAdamW : public torch::optim::AdamW {
 public:
  FusedAdamW(const std::vector<torch::Tensor>& params, const torch::optim::AdamWOptions& options);

  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  struct StepCount {
    torch::Tensor tensor;  // float32 scalar on the parameter's device, the kernel's count
    int64_t value = 0;     // the count it holds
  };
  std::map<void*, StepCount> steps_;  // by parameter (its TensorImpl), as the optimizer state
};

}  // namespace dtwin::rt
