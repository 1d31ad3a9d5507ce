#include "models/nn/decoder_layer.hpp"

#include <torch/torch.h>

#include <utility>

namespace dtwin::nn {

DecoderLayerImpl::DecoderLayerImpl(const ModelSpec& spec, int layer, double eps,
                                   const torch::TensorOptions& options, bool recompute_core,
                                   TensorParallelGroup tp, ExpertParallelGroup ep,
                                   ContextParallelGroup cp)
    : tp_(std::move(tp)) {
  attn_norm = register_module("attn_norm", RMSNorm(spec.d_model, eps, options));
  attn =
      register_module("attn", Attention(spec.d_model, spec.n_heads, spec.kv_heads(), options,
                                        spec.attention, recompute_core, tp_.size, std::move(cp)));
  mlp_norm = register_module("mlp_norm", RMSNorm(spec.d_model, eps, options));
  if (spec.moe.enabled() && layer >= spec.moe.first_dense_layers)
    moe = register_module("mlp", MoeFeedForward(spec, options, std::move(ep)));
  else
    mlp = register_module("mlp", FeedForward(spec.d_model, spec.ffn_hidden / tp_.size, options));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin) {
  const torch::Tensor h =
      x + leave_parallel_region(attn(enter_parallel_region(attn_norm(x), tp_), cos, sin), tp_);
  const torch::Tensor normed = enter_parallel_region(mlp_norm(h), tp_);
  return h + leave_parallel_region(moe ? moe(normed) : mlp(normed), tp_);
}

}  // namespace dtwin::nn
