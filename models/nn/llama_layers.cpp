#include "models/nn/llama_layers.hpp"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/nn/fused_ops.hpp"
#include "models/nn/recompute.hpp"

namespace dtwin::nn {

TokenEmbeddingImpl::TokenEmbeddingImpl(std::int64_t vocab_size, std::int64_t d_model,
                                       const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({vocab_size, d_model}, options));
}

torch::Tensor TokenEmbeddingImpl::forward(const torch::Tensor& ids) {
  return torch::embedding(weight, ids);
}

RMSNormImpl::RMSNormImpl(std::int64_t dim, double eps, const torch::TensorOptions& options)
    : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}, options));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  if (fused) return fused_rms_norm(x, weight, eps_);
  const torch::Tensor xf = x.to(torch::kFloat32);
  const torch::Tensor normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return normed.to(x.scalar_type()) * weight.to(x.scalar_type());
}

std::pair<torch::Tensor, torch::Tensor> rotary_tables(std::int64_t seq_len, std::int64_t head_dim,
                                                      double base,
                                                      const torch::TensorOptions& options) {
  const auto fp32 = torch::TensorOptions().dtype(torch::kFloat32).device(options.device());
  const torch::Tensor exponents =
      torch::arange(0, head_dim, 2, fp32) / static_cast<double>(head_dim);
  const torch::Tensor inv_freq = torch::pow(base, -exponents);          // [hd/2]
  const torch::Tensor positions = torch::arange(seq_len, fp32);         // [s]
  const torch::Tensor angles = torch::outer(positions, inv_freq);       // [s, hd/2]
  const torch::Tensor full = torch::cat({angles, angles}, /*dim=*/-1);  // [s, hd]
  return {full.cos().to(options.dtype()), full.sin().to(options.dtype())};
}

torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin) {
  const std::int64_t half = x.size(-1) / 2;
  const torch::Tensor x1 = x.narrow(-1, 0, half);
  const torch::Tensor x2 = x.narrow(-1, half, half);
  const torch::Tensor rotated = torch::cat({-x2, x1}, /*dim=*/-1);
  return x * cos + rotated * sin;
}

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, dtwin::Attention core) {
  const std::int64_t heads = q.size(1), kv_heads = k.size(1);
  if (kv_heads <= 0 || heads % kv_heads != 0 || v.size(1) != kv_heads)
    throw std::invalid_argument("causal_attention: " + std::to_string(kv_heads) +
                                " key/value heads do not serve " + std::to_string(heads) +
                                " query heads in equal groups");
  if (core == dtwin::Attention::Eager) {
    // Each key/value head's group of g query heads folded into the rows: q [b, kv, g·s, hd], so
    // that one product per key/value head serves its group without copying k or v g times.
    const std::int64_t b = q.size(0), s = q.size(2), hd = q.size(3), g = heads / kv_heads;
    const torch::Tensor rows = q.reshape({b, kv_heads, g * s, hd});
    const torch::Tensor scores = torch::matmul(rows, k.transpose(-2, -1)) *
                                 (1.0 / std::sqrt(static_cast<double>(hd)));  // [b, kv, g·s, s]
    const torch::Tensor future =
        torch::ones({s, s}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
    const torch::Tensor masked =  // the [s, s] mask broadcast over each group's g row blocks
        scores.view({b, kv_heads, g, s, s}).masked_fill(future, -INFINITY).view(scores.sizes());
    const torch::Tensor out = torch::matmul(torch::softmax(masked, -1), v);
    return out.view({b, heads, s, hd});
  }
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true, /*scale=*/std::nullopt,
                                          /*enable_gqa=*/kv_heads != heads);
}

AttentionImpl::AttentionImpl(std::int64_t d_model, std::int64_t n_heads, std::int64_t n_kv_heads,
                             const torch::TensorOptions& options, dtwin::Attention core,
                             bool recompute_core, int tp_size, ContextParallelGroup cp)
    : local_heads_(n_heads / tp_size),
      local_kv_heads_(n_kv_heads / tp_size),
      head_dim_(d_model / n_heads),
      core_(core),
      recompute_core_(recompute_core),
      cp_(std::move(cp)) {
  const std::int64_t local_width = local_heads_ * head_dim_;
  const std::int64_t kv_width = local_kv_heads_ * head_dim_;
  wq = register_module("wq", SplitLinear(d_model, local_width, options));
  wk = register_module("wk", SplitLinear(d_model, kv_width, options));
  wv = register_module("wv", SplitLinear(d_model, kv_width, options));
  wo = register_module("wo", SplitLinear(local_width, d_model, options));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin) {
  const std::int64_t b = x.size(0), s = x.size(1);
  auto heads = [&](const torch::Tensor& t) {  // [b, s, n·hd] -> [b, s, n, hd]
    return t.view({b, s, -1, head_dim_});
  };
  auto rotated = [&](const torch::Tensor& t) {  // [b, s, n, hd] -> [b, n, s, hd]
    return fused_rotary ? nn::fused_rotary(t, cos, sin).transpose(1, 2)
                        : apply_rotary(t.transpose(1, 2), cos, sin);
  };
  const torch::Tensor q = rotated(heads(wq(x)));
  const torch::Tensor k = rotated(heads(wk(x)));
  const torch::Tensor v = heads(wv(x)).transpose(1, 2);
  const dtwin::Attention core = core_;
  const ContextParallelGroup cp = cp_;
  const RecomputedBody attention = [core, cp](const std::vector<torch::Tensor>& in) {
    if (cp.size > 1)
      return ring_attention(in[0], in[1], in[2], cp,
                            in[0].is_cpu() ? RingKernel::Fused : RingKernel::Math);
    return causal_attention(in[0], in[1], in[2], core);
  };
  const torch::Tensor out =
      recompute_core_ ? recomputed(attention, {q, k, v}) : attention({q, k, v});  // [b, h, s, hd]
  return wo(out.transpose(1, 2).reshape({b, s, local_heads_ * head_dim_}));
}

FeedForwardImpl::FeedForwardImpl(std::int64_t d_model, std::int64_t ffn_hidden,
                                 const torch::TensorOptions& options) {
  w1 = register_module("w1", SplitLinear(d_model, ffn_hidden, options));
  w2 = register_module("w2", SplitLinear(ffn_hidden, d_model, options));
  w3 = register_module("w3", SplitLinear(d_model, ffn_hidden, options));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  if (fused) return w2(fused_swiglu(w1(x), w3(x)));
  return w2(torch::silu(w1(x)) * w3(x));
}

}  // namespace dtwin::nn
