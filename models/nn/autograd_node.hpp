// A hand-written autograd node: a function's output given a backward of our own, for the
// operations whose backward needs what torch::autograd::Function's context cannot hold (a
// c10d group, a function to run again).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace dtwin::nn {

/// Gradients with respect to a node's inputs, one per input (undefined where none), from the
/// gradient of its output.
using BackwardFunction = std::function<std::vector<torch::Tensor>(const torch::Tensor& grad)>;

/// True when grad mode is on and one of `inputs` requires grad: an operation on them needs a graph.
bool needs_graph(const std::vector<torch::Tensor>& inputs);

/// Gives `output`, a tensor computed without autograd history, a grad_fn named `name` whose
/// backward is `backward` and whose edges lead to `inputs` (those that require grad). When grad
/// mode is off or no input requires grad, `output` is returned as it is. Returns `output`.
torch::Tensor with_backward(torch::Tensor output, const std::vector<torch::Tensor>& inputs,
                            BackwardFunction backward, const std::string& name);

}  // namespace dtwin::nn
