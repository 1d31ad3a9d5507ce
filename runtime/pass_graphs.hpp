// CUDA graphs of a single-rank stage's passes (runtime.cuda_graphs; Megatron-LM's
// --enable-cuda-graph): after a few eager steps, the forward and the backward of one
// microbatch are each captured once into a CUDA graph (torch.cuda.make_graphed_callables'
// scheme: two graphs sharing one memory pool, the inputs copied into static buffers) and every
// later microbatch replays them: one launch per pass instead of one per kernel, for passes whose
// kernels are shorter than their launches (the launch-bound h100-single). The optimizer step
// stays eager, so the learning-rate schedule holds. The CUDA implementation:
// runtime/cuda/captured_passes.hpp. The shapes must be static (a LLaMA stage
// without a mixture of experts) and F and B must alternate (1F1B on one stage): the forward
// graph's saved activations are the backward graph's input.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "models/nn/stage_module.hpp"

namespace dtwin::rt {

class PassGraphs {
 public:
  virtual ~PassGraphs() = default;
  /// The loss of `module` on (ids, targets) int64 [b, s] in training step `step`: an eager
  /// forward in the first kEagerSteps steps this process runs (a resumed run's too), then a
  /// replay of the captured one (captured at the next step's first call). The returned tensor
  /// is overwritten by the next forward.
  virtual torch::Tensor forward(std::int64_t step, const torch::Tensor& ids,
                                const torch::Tensor& targets) = 0;
  /// The backward of `loss` (the last forward's result) times `scale`, accumulating into the
  /// parameters' gradients, eager or replayed as that forward was.
  virtual void backward(const torch::Tensor& loss, double scale) = 0;

  /// Eager steps before the capture: the caching allocator, cuBLAS and the kernels' lazy
  /// initialisation settle, and the parameters' gradients exist (the executor zeroes them in
  /// place, so the captured backward accumulates into the same tensors).
  static constexpr std::int64_t kEagerSteps = 2;
};

}  // namespace dtwin::rt
