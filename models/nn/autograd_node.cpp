#include "models/nn/autograd_node.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <algorithm>
#include <memory>

namespace dtwin::nn {
namespace {

class FunctionNode : public torch::autograd::Node {
 public:
  FunctionNode(BackwardFunction backward, std::string name)
      : backward_(std::move(backward)), name_(std::move(name)) {}

  std::string name() const override { return name_; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    return backward_(grads.at(0));
  }

  void release_variables() override { backward_ = nullptr; }

 private:
  BackwardFunction backward_;
  std::string name_;
};

}  // namespace

bool needs_graph(const std::vector<torch::Tensor>& inputs) {
  return torch::GradMode::is_enabled() &&
         std::any_of(inputs.begin(), inputs.end(),
                     [](const torch::Tensor& t) { return t.defined() && t.requires_grad(); });
}

torch::Tensor with_backward(torch::Tensor output, const std::vector<torch::Tensor>& inputs,
                            BackwardFunction backward, const std::string& name) {
  if (!needs_graph(inputs)) return output;
  auto node = std::shared_ptr<FunctionNode>(new FunctionNode(std::move(backward), name),
                                            torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  torch::autograd::set_history(output, node);
  return output;
}

}  // namespace dtwin::nn
