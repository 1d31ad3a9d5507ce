// How one attention layer's heads lie on the GPUs of a tensor-parallel group, with grouped-query
// attention (Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models from
// Multi-Head Checkpoints"; model.n_kv_heads): the one rule that the cost model's parameters and
// FLOPs, the layer's operators and its activation memory all apply.
#pragma once

#include <algorithm>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// Heads of one attention layer of `a` query heads and `kv` key/value heads (kv divides a) over
/// a tensor-parallel group of `tp`, as counts (doubles: they enter products that overflow int).
/// Query heads are split, a/tp per GPU (Shoeybi et al. 2019). Key/value heads are split too,
/// kv/tp per GPU, where tp divides kv (Megatron-Core's num_query_groups, which requires that);
/// where kv divides tp each is replicated on tp/kv GPUs, one per GPU (vLLM's QKVParallelLinear),
/// so that the group holds max(kv, tp) key/value heads in all.
struct AttentionSplit {
  double head_dim = 0;    ///< hd = d_model / n_heads, the width of every head
  double kv = 0;          ///< the layer's key/value heads (n_kv_heads)
  double q_per_gpu = 0;   ///< a / tp
  double kv_per_gpu = 0;  ///< max(1, kv / tp)
  double kv_held = 0;     ///< key/value heads the group holds, kv_per_gpu · tp = max(kv, tp)
};

inline AttentionSplit attention_split(const ModelSpec& m, int tp) {
  AttentionSplit x;
  x.head_dim = double(m.d_model) / m.n_heads;
  x.kv = m.kv_heads();
  x.q_per_gpu = double(m.n_heads) / tp;
  x.kv_per_gpu = std::max(1.0, x.kv / tp);
  x.kv_held = x.kv_per_gpu * tp;
  return x;
}

}  // namespace dtwin
