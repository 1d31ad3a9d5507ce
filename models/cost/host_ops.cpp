#include "models/cost/host_ops.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace dtwin {
namespace {

struct Row {
  std::string_view name;
  HostOps ops;
};

// bench/host_dispatch.py --json, torch 2.11: forward, forward without grad, backward.
constexpr std::array<Row, 9> kGpt2 = {{{"input_norm", {1, 1, 3}},
                                       {"qkv", {6, 6, 11}},
                                       {"attention_out", {4, 4, 8}},
                                       {"attention_residual", {7, 7, 5}},
                                       {"mlp_norm", {1, 1, 3}},
                                       {"mlp_fc1", {4, 4, 8}},
                                       {"gelu", {5, 5, 6}},
                                       {"mlp_fc2", {4, 4, 8}},
                                       {"mlp_residual", {7, 7, 5}}}};
constexpr std::array<Row, 11> kLlama = {{{"input_norm", {1, 1, 3}},
                                         {"qkv", {5, 5, 9}},
                                         {"rotary", {14, 14, 18}},
                                         {"attention_out", {4, 4, 8}},
                                         {"attention_residual", {1, 1, 0}},
                                         {"mlp_norm", {1, 1, 3}},
                                         {"mlp_gate", {4, 4, 8}},
                                         {"mlp_up", {4, 4, 8}},
                                         {"swiglu", {2, 2, 3}},
                                         {"mlp_down", {4, 4, 8}},
                                         {"mlp_residual", {1, 1, 0}}}};
// The attention core: Megatron's CoreAttention (baddbmm, fused scale-mask-softmax, dropout in
// the RNG tracker's fork, bmm, the layout changes around them) or one flash-attention call with
// its layout changes.
constexpr HostOps kEagerAttention{23, 22, 24};
constexpr HostOps kFlashAttention{8, 7, 8};

}  // namespace

HostOps layer_host_ops(ModelFamily family, Attention attention, std::string_view name) {
  if (name == "attention") return attention == Attention::Flash ? kFlashAttention : kEagerAttention;
  const auto find = [name](const auto& rows) -> HostOps {
    for (const Row& row : rows)
      if (row.name == name) return row.ops;
    throw std::logic_error("layer_host_ops: no layer operator '" + std::string(name) + "'");
  };
  return family == ModelFamily::Llama ? find(kLlama) : find(kGpt2);
}

}  // namespace dtwin
