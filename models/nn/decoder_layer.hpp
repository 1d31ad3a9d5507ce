// One pre-norm LLaMA decoder layer (Touvron et al. 2023): attention and a feed-forward, dense
// or a mixture of experts, each behind an RMSNorm and a residual connection.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "models/nn/llama_layers.hpp"
#include "models/nn/moe.hpp"
#include "models/nn/tensor_parallel.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin::nn {

/// Layer `layer` of `spec` (d_model, n_heads, n_kv_heads, ffn_hidden, attention, moe):
/// x + attn(attn_norm(x)), then h + mlp(mlp_norm(h)), RMSNorm epsilon `eps`. Submodules
/// attn_norm, attn, mlp_norm and "mlp": the dense SwiGLU (FeedForward), or from layer
/// moe.first_dense_layers on in a model with experts the MoE feed-forward (MoeFeedForward, one
/// rank holding its expert-parallel group `ep`'s share of the experts; the caller refuses tp > 1
/// with experts). `recompute_core` as AttentionImpl's. With a tensor-parallel
/// group `tp` of t > 1 members, attn and mlp hold the member's shards and each branch runs as
/// leave_parallel_region(branch(enter_parallel_region(norm(x)))) (Megatron's f and g, or their
/// sequence-parallel all-gather and reduce-scatter, with x then [b, s/t, d]). With a
/// context-parallel group `cp` of size > 1 the attention is ring attention over it (x holds the
/// member's tokens; AttentionImpl).
class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const ModelSpec& spec, int layer, double eps,
                   const torch::TensorOptions& options, bool recompute_core = false,
                   TensorParallelGroup tp = {}, ExpertParallelGroup ep = {},
                   ContextParallelGroup cp = {});
  /// x [b, s, d] ([b, s/t, d] under sequence parallelism), rotary tables cos, sin [s, hd] -> the
  /// shape of x.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

  RMSNorm attn_norm{nullptr}, mlp_norm{nullptr};
  Attention attn{nullptr};
  FeedForward mlp{nullptr};     ///< a dense layer's
  MoeFeedForward moe{nullptr};  ///< a MoE layer's, registered as "mlp"

 private:
  TensorParallelGroup tp_;
};
TORCH_MODULE(DecoderLayer);

}  // namespace dtwin::nn
