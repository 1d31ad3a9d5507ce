// The building blocks of a LLaMA decoder (Touvron et al. 2023): token embedding, RMSNorm,
// rotary position embeddings, causal multi-head self-attention, the SwiGLU feed-forward and the
// pre-norm decoder layer. Parameters are created uninitialised with the given TensorOptions
// (device, dtype); StageModule initialises them by global name (models/nn/param_init.hpp).
//
// Shapes: b = batch, s = sequence, d = d_model, h = n_heads, hd = d/h, kv = n_kv_heads (h for
// multi-head attention), f = ffn_hidden, V = vocab_size.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <utility>

#include "models/nn/ring_attention.hpp"
#include "models/nn/split_linear.hpp"
#include "models/nn/tensor_parallel.hpp"
#include "models/spec/settings.hpp"

namespace dtwin::nn {

/// The token embedding, one parameter "weight" [V, d]. Its gradient is computed during the
/// backward as usual (never deferred to a WeightGradStash).
class TokenEmbeddingImpl : public torch::nn::Module {
 public:
  TokenEmbeddingImpl(std::int64_t vocab_size, std::int64_t d_model,
                     const torch::TensorOptions& options);
  /// ids int64 [b, s] -> [b, s, d].
  torch::Tensor forward(const torch::Tensor& ids);

  torch::Tensor weight;
};
TORCH_MODULE(TokenEmbedding);

/// RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x², last dim) + eps) · weight, one parameter
/// "weight" [d]. The normalisation runs in fp32 and is cast back to x's dtype, as is the weight;
/// `fused`: ATen's fused kernel (fused_rms_norm), which applies the weight before the cast.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(std::int64_t dim, double eps, const torch::TensorOptions& options);
  /// x [..., d] -> [..., d].
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;
  bool fused = false;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

/// The rotary tables (cos, sin), each [s, hd], for positions 0..s-1: angle(p, i) = p ·
/// base^(-2i/hd) for i < hd/2, repeated for the second half (the "rotate-half" layout). Computed
/// in fp32 and returned with `options` (device, dtype).
std::pair<torch::Tensor, torch::Tensor> rotary_tables(std::int64_t seq_len, std::int64_t head_dim,
                                                      double base,
                                                      const torch::TensorOptions& options);

/// Applies rotary position embeddings to x [b, h, s, hd] with tables cos, sin [s, hd]:
/// x·cos + rotate_half(x)·sin, where rotate_half([x1, x2]) = [-x2, x1] (halves of the last dim).
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin);

/// softmax(q·kᵀ/sqrt(hd) + causal mask)·v for q [b, h, s, hd] and k, v [b, kv, s, hd] ->
/// [b, h, s, hd]; position i attends to positions 0..i (Vaswani et al. 2017, eq. 1). With kv < h
/// it is grouped-query attention (Ainslie et al. 2023): query head j uses key/value head
/// j / (h/kv), the grouping of torch's enable_gqa and of Megatron-LM's query groups. Neither core
/// copies k or v per query head, so autograd keeps them at kv heads. `core` Flash: through
/// at::scaled_dot_product_attention with is_causal (and enable_gqa when kv < h), which picks a
/// fused kernel (flash or memory-efficient attention on CUDA, a blocked flash kernel on CPU) and
/// keeps no [s, s] tensor for the backward; on CUDA in fp32 with kv < h only its math kernel
/// groups heads, and that one expands k and v. Eager: the explicit products and softmax, whose
/// [b, h, s, s] probabilities autograd keeps, each key/value head's query group folded into
/// rows. Throws std::invalid_argument unless kv divides h.
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v,
                               dtwin::Attention core = dtwin::Attention::Flash);

/// Causal self-attention with RoPE on q and k and kv = n_kv_heads key/value heads (grouped-query
/// attention where kv < h), its core computed as `core` says and, when `recompute_core`,
/// recomputed in the backward (selective recomputation, Korthikanti et al. 2022 §4: only q, k
/// and v are kept); submodules wq [d, d], wk and wv [kv·hd, d], wo [d, d] (SplitLinear, no
/// bias). With `tp_size` t > 1 it holds one tensor-parallel member's h/t query heads and kv/t
/// key/value heads (Megatron-LM; the caller checks that t divides both): wq [d/t, d], wk, wv
/// [kv·hd/t, d] column-parallel, wo row-parallel [d, d/t], whose output is the member's partial
/// sum (the caller reduces it, leave_parallel_region). With a context-parallel group `cp` of
/// size > 1 the core is ring_attention over the group (x then holds the member's tokens,
/// context_parallel_positions, and cos, sin their rows), by the fused kernel on the CPU.
/// `fused_rotary`: the rotary embeddings by one kernel per pass (fused_rotary).
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(std::int64_t d_model, std::int64_t n_heads, std::int64_t n_kv_heads,
                const torch::TensorOptions& options,
                dtwin::Attention core = dtwin::Attention::Flash, bool recompute_core = false,
                int tp_size = 1, ContextParallelGroup cp = {});
  /// x [b, s, d], rotary tables cos, sin [s, hd] -> [b, s, d].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

  SplitLinear wq{nullptr}, wk{nullptr}, wv{nullptr}, wo{nullptr};
  bool fused_rotary = false;

 private:
  std::int64_t local_heads_, local_kv_heads_, head_dim_;
  dtwin::Attention core_;
  bool recompute_core_;
  ContextParallelGroup cp_;
};
TORCH_MODULE(Attention);

/// The SwiGLU feed-forward (Shazeer 2020): w2(silu(w1 x) · w3 x); w1 (gate) and w3 (up) [f, d],
/// w2 (down) [d, f], all SplitLinear without bias. A tensor-parallel member passes f/t as
/// ffn_hidden: w1 and w3 are then its column-parallel shards, w2 its row-parallel one, and the
/// output its partial sum. `fused`: silu(·)·(·) by one kernel per pass (fused_swiglu).
class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(std::int64_t d_model, std::int64_t ffn_hidden,
                  const torch::TensorOptions& options);
  /// x [b, s, d] -> [b, s, d].
  torch::Tensor forward(const torch::Tensor& x);

  SplitLinear w1{nullptr}, w2{nullptr}, w3{nullptr};
  bool fused = false;
};
TORCH_MODULE(FeedForward);

}  // namespace dtwin::nn
