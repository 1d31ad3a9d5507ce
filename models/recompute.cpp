#include "models/recompute.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <algorithm>
#include <memory>
#include <string>

namespace dtwin::nn {
namespace {

class RecomputeBackward : public torch::autograd::Node {
 public:
  RecomputeBackward(RecomputedBody body, std::vector<torch::Tensor> inputs)
      : body_(std::move(body)), inputs_(std::move(inputs)) {}

  std::string name() const override { return "RecomputeBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    std::vector<torch::Tensor> inputs;
    for (const torch::Tensor& t : inputs_)
      inputs.push_back(t.detach().requires_grad_(t.requires_grad()));
    torch::Tensor output;
    {
      torch::AutoGradMode enabled(true);
      output = body_(inputs);
    }
    torch::autograd::backward({output}, {grads.at(0)});
    torch::autograd::variable_list input_grads;
    for (const torch::Tensor& t : inputs)
      input_grads.push_back(t.requires_grad() ? t.grad() : torch::Tensor());
    return input_grads;
  }

  void release_variables() override {
    inputs_.clear();
    body_ = nullptr;
  }

 private:
  RecomputedBody body_;
  std::vector<torch::Tensor> inputs_;  // detached, with the inputs' requires_grad
};

}  // namespace

torch::Tensor recomputed(const RecomputedBody& body, const std::vector<torch::Tensor>& inputs) {
  const bool needs_graph = torch::GradMode::is_enabled() &&
                           std::any_of(inputs.begin(), inputs.end(),
                                       [](const torch::Tensor& t) { return t.requires_grad(); });
  if (!needs_graph) return body(inputs);
  torch::Tensor output;
  {
    torch::NoGradGuard no_grad;
    output = body(inputs);
  }
  std::vector<torch::Tensor> saved;
  for (const torch::Tensor& t : inputs) {
    torch::Tensor kept = t.detach();
    kept.set_requires_grad(t.requires_grad());
    saved.push_back(kept);
  }
  auto node = std::shared_ptr<RecomputeBackward>(new RecomputeBackward(body, std::move(saved)),
                                                 torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  torch::autograd::set_history(output, node);
  return output;
}

}  // namespace dtwin::nn
