#include "models/nn/recompute.hpp"

#include "models/nn/autograd_node.hpp"

namespace dtwin::nn {
namespace {

thread_local bool recomputing = false;

}  // namespace

bool in_recomputation() {
  return recomputing;
}

torch::Tensor recomputed(const RecomputedBody& body, const std::vector<torch::Tensor>& inputs) {
  if (!needs_graph(inputs)) return body(inputs);
  torch::Tensor output;
  {
    torch::NoGradGuard no_grad;
    output = body(inputs);
  }
  std::vector<torch::Tensor> saved;  // detached, with the inputs' requires_grad
  for (const torch::Tensor& t : inputs) {
    torch::Tensor kept = t.detach();
    kept.set_requires_grad(t.requires_grad());
    saved.push_back(kept);
  }
  const BackwardFunction backward = [body, saved](const torch::Tensor& grad) {
    std::vector<torch::Tensor> copies;
    for (const torch::Tensor& t : saved)
      copies.push_back(t.detach().requires_grad_(t.requires_grad()));
    torch::Tensor again;
    {
      torch::AutoGradMode enabled(true);
      const bool outer = recomputing;
      recomputing = true;
      try {
        again = body(copies);
      } catch (...) {
        recomputing = outer;
        throw;
      }
      recomputing = outer;
    }
    torch::autograd::backward({again}, {grad});
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor& t : copies)
      grads.push_back(t.requires_grad() ? t.grad() : torch::Tensor());
    return grads;
  };
  return with_backward(output, inputs, backward, "RecomputeBackward");
}

}  // namespace dtwin::nn
