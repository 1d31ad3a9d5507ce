#include "models/nn/param_init.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>

#include "base/splitmix64.hpp"

namespace dtwin::nn {
namespace {

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::uint64_t parameter_seed(std::uint64_t seed, std::string_view name) {
  return splitmix64(splitmix64(seed) ^ fnv1a64(name));
}

std::optional<double> parameter_init_std(std::string_view name, int n_layers) {
  if (ends_with(name, "norm.weight")) return std::nullopt;
  if (ends_with(name, ".wo.weight") || ends_with(name, ".w2.weight") ||
      ends_with(name, ".experts.w2"))
    return 0.02 / std::sqrt(2.0 * n_layers);
  return 0.02;
}

std::optional<int> tensor_parallel_dim(std::string_view name) {
  if (ends_with(name, "norm.weight")) return std::nullopt;
  if (ends_with(name, ".wo.weight") || ends_with(name, ".w2.weight")) return 1;
  return 0;
}

std::optional<int> expert_parallel_dim(std::string_view name) {
  if (name.find(".experts.") != std::string_view::npos) return 0;
  return std::nullopt;
}

void init_parameters(torch::nn::Module& module, std::uint64_t seed, int n_layers, int tp_rank,
                     int tp_size, int ep_rank, int ep_size) {
  torch::NoGradGuard no_grad;
  for (const auto& item : module.named_parameters()) {
    torch::Tensor parameter = item.value();
    const std::optional<double> stddev = parameter_init_std(item.key(), n_layers);
    if (!stddev) {
      parameter.fill_(1.0);
      continue;
    }
    at::Generator generator = at::detail::createCPUGenerator(parameter_seed(seed, item.key()));
    const std::optional<int> expert_dim = expert_parallel_dim(item.key());
    const std::optional<int> dim = expert_dim ? expert_dim : tensor_parallel_dim(item.key());
    const int rank = expert_dim ? ep_rank : tp_rank, size = expert_dim ? ep_size : tp_size;
    std::vector<int64_t> whole = parameter.sizes().vec();
    if (dim) whole[*dim] *= size;
    torch::Tensor values = torch::empty(whole, torch::kFloat32);
    values.normal_(0.0, *stddev, generator);
    if (dim) values = values.narrow(*dim, rank * parameter.size(*dim), parameter.size(*dim));
    parameter.copy_(values);
  }
}

}  // namespace dtwin::nn
