// One stage's parameters, gradients and AdamW state sharded over its data-parallel group: ZeRO
// stages 1 to 3 (Rajbhandari et al. 2020, "ZeRO", §5; stage 3 is FSDP's FULL_SHARD).
//
// The stage's Ψ parameters live in one flat fp32 buffer of Ψ' elements (Ψ padded up to a
// multiple of dp), each parameter a view of its slice, in module->parameters() order; replica r
// owns elements [r·Ψ'/dp, (r+1)·Ψ'/dp). Gradients accumulate in a second flat buffer of Ψ'
// elements that every parameter's .grad() views. What a rank holds between steps:
//   - ZeRO 1: all parameters, all gradients, AdamW's m and v of its shard;
//   - ZeRO 2: all parameters, its gradient shard, m and v of its shard;
//   - ZeRO 3: its parameter shard, its gradient shard, m and v of its shard; the full
//     parameters exist only between an UNSHARD and the next RESHARD.
// A freed buffer keeps its tensor and views; only its storage is released (resized to 0
// bytes) and later re-allocated, as PyTorch's FSDP does, so autograd's saved weights stay valid
// across a RESHARD ... UNSHARD pair.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "models/nn/stage_module.hpp"

namespace dtwin::rt {

/// Bytes of `optimizer`'s state tensors (AdamW's m, v and, with amsgrad, max v).
std::size_t adamw_state_bytes(const torch::optim::AdamW& optimizer);

class ZeroStage {
 public:
  /// Flattens `module`'s parameters (copying their values) for replica `replica` of `dp`
  /// under ZeRO stage `zero` (1..3); under ZeRO 3 the full buffer is then released, so the
  /// first forward needs an UNSHARD. The AdamW over this replica's shard takes `options`.
  /// Throws std::invalid_argument for zero outside 1..3, dp < 1 or replica outside 0..dp-1.
  ZeroStage(nn::StageModule& module, int zero, int dp, int replica,
            const torch::optim::AdamWOptions& options);

  int zero() const { return zero_; }
  /// This replica's index in the DP group, and the group's size (dp).
  int replica() const { return replica_; }
  int replicas() const { return dp_; }
  /// Ψ' / dp: elements of one shard.
  int64_t shard_elements() const { return shard_elements_; }
  /// The flat parameters [Ψ'], whose storage is allocated only while gathered().
  torch::Tensor& full_parameters() { return full_; }
  bool gathered() const;
  /// This replica's parameter shard [Ψ'/dp]: a view of the full buffer under ZeRO 1 and 2,
  /// its own tensor under ZeRO 3.
  const torch::Tensor& parameter_shard() const { return shard_; }

  /// Allocates the full parameter buffer (its values undefined until the caller gathers them
  /// into it); does nothing when already gathered.
  void allocate_parameters();
  /// Releases the full parameter buffer's storage (RESHARD; ZeRO 3 only, a no-op otherwise).
  void release_parameters();

  /// Allocates the zeroed full gradient buffer [Ψ'] when it is released (ZeRO 2 and 3, after a
  /// REDUCE_GRAD); every backward calls this first.
  void prepare_gradients();
  /// The full gradient buffer [Ψ'], summed over this rank's microbatches.
  torch::Tensor& full_gradients() { return full_grad_; }
  /// Keeps `reduced` [Ψ'/dp], this replica's shard of the gradients summed over the group,
  /// divided by dp, as the shard's gradient; under ZeRO 2 and 3 the full gradient buffer is
  /// then released. Throws std::invalid_argument for a wrong size.
  void keep_gradient_shard(const torch::Tensor& reduced);

  /// Views of this replica's gradient shard (after keep_gradient_shard) holding the elements
  /// of each of `parameters` (the stage module's) that lie inside the shard, in order; a
  /// parameter wholly outside the shard contributes none. Throws std::invalid_argument for a
  /// tensor that is not a view of the parameter buffer.
  std::vector<torch::Tensor> gradient_shard_views(const std::vector<torch::Tensor>& parameters);

  /// AdamW on this replica's shard with its reduced gradient, then clears the gradients (zeroes
  /// the full buffer under ZeRO 1, drops the shard's gradient under ZeRO 2 and 3). The shard
  /// must be gathered back into the full parameters (UNSHARD) before they are read.
  void step();

  /// The optimizer of this replica's shard (its state is what a checkpoint holds).
  torch::optim::AdamW& optimizer() { return *optimizer_; }

  /// Bytes this rank holds now for the stage's model states: the parameter and gradient buffers
  /// whose storage is allocated, the shard's own tensors, and AdamW's state tensors.
  std::size_t model_state_bytes() const;

 private:
  int zero_;
  int dp_;
  int replica_;
  int64_t shard_elements_;
  torch::Tensor full_;       // [Ψ'] parameters, viewed by the module's parameters
  torch::Tensor full_grad_;  // [Ψ'] gradients, viewed by the parameters' .grad()
  torch::Tensor shard_;      // [Ψ'/dp] what the optimizer updates
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

}  // namespace dtwin::rt
