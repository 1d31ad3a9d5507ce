#include "models/nn/split_linear.hpp"

#include <torch/autograd.h>
#include <torch/torch.h>

namespace dtwin::nn {
namespace {

/// grad_output [..., out], input [..., in] -> [out, in] in `dtype` (computed in grad_output's).
torch::Tensor weight_gradient(const torch::Tensor& input, const torch::Tensor& grad_output,
                              torch::ScalarType dtype) {
  return grad_output.reshape({-1, grad_output.size(-1)})
      .t()
      .mm(input.reshape({-1, input.size(-1)}).to(grad_output.scalar_type()))
      .to(dtype);
}

struct LinearFunction : public torch::autograd::Function<LinearFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& weight, StashSlot* slot) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["slot"] = reinterpret_cast<std::int64_t>(slot);
    return torch::matmul(input, weight.to(input.scalar_type()).t());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& input = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& grad_output = grad_outputs[0];
    torch::Tensor grad_input, grad_weight;
    if (ctx->needs_input_grad(0))
      grad_input = torch::matmul(grad_output, weight.to(grad_output.scalar_type()));
    if (ctx->needs_input_grad(1)) {
      const auto* slot = reinterpret_cast<StashSlot*>(ctx->saved_data["slot"].toInt());
      if (slot->active != nullptr)
        slot->active->record(input, grad_output, weight);
      else
        grad_weight = weight_gradient(input, grad_output, weight.scalar_type());
    }
    return {grad_input, grad_weight, torch::Tensor()};
  }
};

}  // namespace

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

torch::Tensor split_linear(const torch::Tensor& input, const torch::Tensor& weight,
                           StashSlot& slot) {
  return LinearFunction::apply(input, weight, &slot);
}

SplitLinearImpl::SplitLinearImpl(std::int64_t in_features, std::int64_t out_features,
                                 const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out_features, in_features}, options));
}

torch::Tensor SplitLinearImpl::forward(const torch::Tensor& input) {
  return split_linear(input, weight, *slot);
}

}  // namespace dtwin::nn
