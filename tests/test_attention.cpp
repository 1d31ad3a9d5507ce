// Causal attention, flash (at::scaled_dot_product_attention) and eager (explicit products and
// softmax), against softmax(q·kᵀ/sqrt(hd) + causal mask)·v (Vaswani et al. 2017, eq. 1) in fp32.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/nn/llama_layers.hpp"

namespace {

// Eq. 1 with einsum and an additive mask of -inf above the diagonal.
torch::Tensor explicit_attention(const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v) {
  const int64_t s = q.size(-2);
  const torch::Tensor mask = torch::full({s, s}, -std::numeric_limits<double>::infinity()).triu(1);
  const torch::Tensor logits = torch::einsum("bhid,bhjd->bhij", {q, k}) / std::sqrt(q.size(-1));
  return torch::einsum("bhij,bhjd->bhid", {torch::softmax(logits + mask, -1), v});
}

/// Largest |a - b| relative to the largest |b|, or absolute where |b| stays below 1 (the
/// gradients of q and k are exactly zero for a sequence of one token).
double relative_or_absolute_error(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(1.0, b.abs().max().item<double>());
}

}  // namespace

TEST_CASE("flash and eager causal attention equal the explicit softmax form to 1e-5 in fp32",
          "[torch][attention]") {
  const auto [b, h, s, hd] =
      GENERATE(std::array<int64_t, 4>{1, 1, 1, 8}, std::array<int64_t, 4>{2, 3, 17, 16},
               std::array<int64_t, 4>{2, 6, 256, 48});
  INFO("b " << b << ", h " << h << ", s " << s << ", hd " << hd);
  torch::manual_seed(7);
  const auto make = [&] { return torch::randn({b, h, s, hd}).requires_grad_(true); };
  const torch::Tensor q = make(), k = make(), v = make();
  const torch::Tensor upstream = torch::randn({b, h, s, hd});

  const auto core = GENERATE(dtwin::Attention::Flash, dtwin::Attention::Eager);
  INFO("core " << dtwin::kAttentionNames.name(core));
  const torch::Tensor fused = dtwin::nn::causal_attention(q, k, v, core);
  const auto fused_grads = torch::autograd::grad({fused}, {q, k, v}, {upstream});
  const torch::Tensor reference = explicit_attention(q, k, v);
  const auto reference_grads = torch::autograd::grad({reference}, {q, k, v}, {upstream});

  CHECK(fused.dtype() == torch::kFloat32);
  CHECK(fused.sizes() == reference.sizes());
  CHECK(relative_or_absolute_error(fused, reference) < 1e-5);
  for (int i = 0; i < 3; ++i) {
    INFO("gradient of "
         << "qkv"[i]);
    CHECK(relative_or_absolute_error(fused_grads[i], reference_grads[i]) < 1e-5);
  }
}

TEST_CASE("SDPA causal attention: the first position attends to itself only",
          "[torch][attention]") {
  torch::manual_seed(3);
  const torch::Tensor q = torch::randn({1, 2, 5, 4}), k = torch::randn({1, 2, 5, 4}),
                      v = torch::randn({1, 2, 5, 4});
  const torch::Tensor out = dtwin::nn::causal_attention(q, k, v);
  CHECK(torch::allclose(out.select(2, 0), v.select(2, 0), 1e-6, 1e-6));
}

TEST_CASE("grouped-query attention equals multi-head attention over k and v repeated per group",
          "[torch][attention]") {
  torch::manual_seed(11);
  const int64_t b = 2, h = 6, kv = GENERATE(1, 2, 3), s = 33, hd = 16;
  CAPTURE(kv);
  const torch::Tensor q = torch::randn({b, h, s, hd}).requires_grad_(true);
  const torch::Tensor k = torch::randn({b, kv, s, hd}).requires_grad_(true);
  const torch::Tensor v = torch::randn({b, kv, s, hd}).requires_grad_(true);
  const torch::Tensor upstream = torch::randn({b, h, s, hd});
  // Query head j reads key/value head j / (h / kv): each repeated h / kv times, in order.
  const torch::Tensor reference =
      explicit_attention(q, k.repeat_interleave(h / kv, 1), v.repeat_interleave(h / kv, 1));
  const auto reference_grads = torch::autograd::grad({reference}, {q, k, v}, {upstream});
  for (const auto core : {dtwin::Attention::Flash, dtwin::Attention::Eager}) {
    INFO("core " << dtwin::kAttentionNames.name(core));
    const torch::Tensor out = dtwin::nn::causal_attention(q, k, v, core);
    const auto grads = torch::autograd::grad({out}, {q, k, v}, {upstream});
    CHECK(relative_or_absolute_error(out, reference) < 1e-5);
    for (int i = 0; i < 3; ++i) {
      INFO("gradient of "
           << "qkv"[i]);
      CHECK(grads[i].sizes() == (i == 0 ? q.sizes() : k.sizes()));
      CHECK(relative_or_absolute_error(grads[i], reference_grads[i]) < 1e-5);
    }
  }
  // Key/value heads that do not divide the query heads are refused.
  CHECK_THROWS_AS(
      dtwin::nn::causal_attention(q, torch::randn({b, 4, s, hd}), torch::randn({b, 4, s, hd})),
      std::invalid_argument);
}
