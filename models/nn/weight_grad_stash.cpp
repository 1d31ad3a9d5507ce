#include "models/nn/weight_grad_stash.hpp"

#include <torch/torch.h>

#include <utility>

namespace dtwin::nn {

torch::Tensor weight_gradient(const torch::Tensor& input, const torch::Tensor& grad_output,
                              torch::ScalarType dtype) {
  return grad_output.reshape({-1, grad_output.size(-1)})
      .t()
      .mm(input.reshape({-1, input.size(-1)}).to(grad_output.scalar_type()))
      .to(dtype);
}

void WeightGradStash::record(torch::Tensor input, torch::Tensor grad_output, torch::Tensor weight) {
  entries_.push_back({std::move(input), std::move(grad_output), std::move(weight)});
}

void WeightGradStash::apply() {
  torch::NoGradGuard no_grad;
  for (Entry& entry : entries_) {
    torch::Tensor gradient =
        weight_gradient(entry.input, entry.grad_output, entry.weight.scalar_type());
    torch::Tensor& grad = entry.weight.mutable_grad();
    if (grad.defined())
      grad.add_(gradient);
    else
      grad = gradient;
  }
  entries_.clear();
}

}  // namespace dtwin::nn
