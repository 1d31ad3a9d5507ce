// Deterministic, split-independent initialisation of the LLaMA stage parameters.
//
// Every parameter is drawn from its own CPU generator, seeded by a hash of (seed, the
// parameter's global name, e.g. "layers.3.attn.wq.weight"). A parameter's values therefore
// depend only on the seed and its name, never on which other parameters a stage holds or the
// order they are built in: stage modules cut any way hold exactly the values of the single-stage
// model. Values are drawn in fp32 on the CPU and then copied to the parameter's device and dtype,
// so they are the same on every device (up to the dtype's rounding).
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace dtwin::nn {

/// The 64-bit generator seed of the parameter `name`: a splitmix64 mix of `seed` and the 64-bit
/// FNV-1a hash of `name`. Stable across platforms, compilers and LibTorch versions.
std::uint64_t parameter_seed(std::uint64_t seed, std::string_view name);

/// The standard deviation of N(0, std²) the parameter `name` is drawn from, or nullopt for a norm
/// weight (any name ending in "norm.weight"), which is set to ones. Output projections of the
/// residual branches ("….wo.weight", "….w2.weight", the routed experts' "….experts.w2") get
/// 0.02/sqrt(2·n_layers) (GPT-2, Radford et al. 2019), every other matrix (embedding, q/k/v,
/// w1/w3, router, LM head) 0.02.
std::optional<double> parameter_init_std(std::string_view name, int n_layers);

/// The dimension along which Megatron-LM's tensor parallelism splits the parameter `name` over
/// the tp members (Shoeybi et al. 2019 §3): 0 (rows, output features) for the column-parallel
/// q/k/v, w1/w3 and LM head and the vocabulary-parallel embedding, 1 (columns, input features)
/// for the row-parallel wo and w2, nullopt for the norm weights, which every member holds whole.
std::optional<int> tensor_parallel_dim(std::string_view name);

/// The dimension along which expert parallelism splits the parameter `name`: 0 (experts) for the
/// routed experts' grouped weights ("….experts.w1", "w2", "w3"), nullopt for every other one.
std::optional<int> expert_parallel_dim(std::string_view name);

/// Initialises every parameter of `module` in place (under no-grad) from its registered name
/// (Module::named_parameters(), which must be the global names) with parameter_init_std() and a
/// generator seeded with parameter_seed(seed, name). With `tp_size` > 1 the module holds member
/// `tp_rank`'s shards: each split parameter (tensor_parallel_dim) is drawn at its whole size,
/// tp_size times its shard along that dimension, and the member keeps slice tp_rank, so the shards
/// of all members put together equal the unsplit model's parameter. The routed experts' weights
/// (expert_parallel_dim) are split the same way over `ep_size` expert-parallel members instead,
/// member `ep_rank` keeping its experts.
void init_parameters(torch::nn::Module& module, std::uint64_t seed, int n_layers, int tp_rank = 0,
                     int tp_size = 1, int ep_rank = 0, int ep_size = 1);

}  // namespace dtwin::nn
