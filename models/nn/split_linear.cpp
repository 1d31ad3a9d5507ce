#include "models/nn/split_linear.hpp"

#include <torch/autograd.h>
#include <torch/torch.h>

#include "models/nn/fp8_linear.hpp"

namespace dtwin::nn {
namespace {

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

torch::Tensor split_linear(const torch::Tensor& input, const torch::Tensor& weight,
                           StashSlot& slot) {
  return LinearFunction::apply(input, weight, &slot);
}

SplitLinearImpl::SplitLinearImpl(std::int64_t in_features, std::int64_t out_features,
                                 const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out_features, in_features}, options));
}

torch::Tensor SplitLinearImpl::forward(const torch::Tensor& input) {
  if (fp8) return fp8_linear(input, weight, *fp8, *slot);
  return split_linear(input, weight, *slot);
}

}  // namespace dtwin::nn
