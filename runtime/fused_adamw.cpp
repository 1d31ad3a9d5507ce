#include "runtime/fused_adamw.hpp"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_fused_adamw.h>
#include <torch/torch.h>

namespace dtwin::rt {

FusedAdamW::FusedAdamW(const std::vector<torch::Tensor>& params,
                       const torch::optim::AdamWOptions& options)
    : torch::optim::AdamW(params, options) {}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (torch::optim::OptimizerParamGroup& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "dtwin::rt::FusedAdamW does not implement amsgrad");
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, counts;
    for (torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      void* key = p.unsafeGetTensorImpl();
      auto& state = state_[key];
      if (!state) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state = std::move(fresh);
      }
      auto& adam = static_cast<torch::optim::AdamWParamState&>(*state);
      StepCount& count = steps_[key];
      if (!count.tensor.defined() || count.value != adam.step()) {
        count.tensor = torch::full({}, static_cast<double>(adam.step()),
                                   torch::TensorOptions(torch::kFloat32).device(p.device()));
        count.value = adam.step();
      }
      adam.step(++count.value);  // and the tensor, below, before the kernel reads it
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(adam.exp_avg());
      exp_avg_sqs.push_back(adam.exp_avg_sq());
      counts.push_back(count.tensor);
    }
    if (params.empty()) continue;
    at::_foreach_add_(counts, 1);  // as torch.optim's _fused_adamw: the kernel reads the count
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, counts,
                      options.lr(), std::get<0>(options.betas()), std::get<1>(options.betas()),
                      options.weight_decay(), options.eps(), /*amsgrad=*/false,
                      /*maximize=*/false);
  }
  return loss;
}

}  // namespace dtwin::rt
