#include "runtime/flat_gradients.hpp"

namespace dtwin::rt {

torch::Tensor flat_gradients(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : parameters)
    parts.push_back(p.grad().defined() ? p.grad().reshape(-1)
                                       : torch::zeros({p.numel()}, p.options()));
  return torch::cat(parts);
}

void set_gradients(const std::vector<torch::Tensor>& parameters, const torch::Tensor& flat,
                   double divisor) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (torch::Tensor p : parameters) {
    const torch::Tensor values = flat.narrow(0, offset, p.numel()).view_as(p) / divisor;
    if (p.grad().defined())
      p.mutable_grad().copy_(values);
    else
      p.mutable_grad() = values;
    offset += p.numel();
  }
}

void copy_slices(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (torch::Tensor t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

std::vector<torch::Tensor> sync_tensors(const std::vector<torch::Tensor>& parameters,
                                        bool weights) {
  std::vector<torch::Tensor> tensors;
  for (torch::Tensor p : parameters) {
    if (!weights && !p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    tensors.push_back(weights ? p : p.mutable_grad());
  }
  return tensors;
}

torch::Tensor flatten(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& t : tensors) parts.push_back(t.reshape(-1));
  return torch::cat(parts);
}

void write_average(const torch::Tensor& flat, int replicas,
                   const std::vector<torch::Tensor>& tensors) {
  // In place: a divided copy would hold the buffer's size once more.
  copy_slices(flat.div_(replicas), tensors);
}

}  // namespace dtwin::rt
