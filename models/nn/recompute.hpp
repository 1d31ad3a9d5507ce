// Activation recomputation: a function's autograd graph dropped after the forward and rebuilt by
// running it again during the backward (Chen et al. 2016, "Training Deep Nets with Sublinear
// Memory Cost"; Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models", §4, for the selective variant that recomputes only the attention core).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace dtwin::nn {

using RecomputedBody = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

/// body(inputs), keeping only `inputs` for the backward instead of body's intermediate tensors.
/// The backward runs body again on detached copies of the inputs with grad enabled and
/// back-propagates the output's gradient through that copy, as PyTorch's reentrant checkpoint
/// does: the parameters body uses get their gradients then (into .grad(), or into the active
/// WeightGradStash during an I pass, on the same thread), and the inputs' gradients flow on.
/// body must return one tensor and give the same values when run again (these models have no
/// dropout). Without grad mode, or when no input requires grad, it is body(inputs).
torch::Tensor recomputed(const RecomputedBody& body, const std::vector<torch::Tensor>& inputs);

/// True on a thread while it runs a body again for the backward: what counts per forward (a
/// router's tokens per expert) must not count the rerun.
bool in_recomputation();

}  // namespace dtwin::nn
