// Closed-form memory and communication volumes of sharded, tensor-parallel and recomputed
// training: ZeRO's model states and data-parallel traffic (Rajbhandari et al. 2020, "ZeRO: Memory
// Optimizations Toward Training Trillion Parameter Models", §5 and §7) and the activations a
// transformer layer keeps (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", Table 2).
#pragma once

#include "models/spec/settings.hpp"

namespace dtwin {

/// Bytes of model states per GPU for `params` parameters held by one data-parallel group of `dp`
/// GPUs under ZeRO stage `zero` (0..3): weights at bytes_per_element, gradients at
/// grad_bytes_per_element and the optimizer's 16 − 2·bytes_per_element bytes (Adam's fp32 m and
/// v, and with 16-bit weights their fp32 master copy). With 16-bit weights and gradients this is
/// ZeRO's mixed-precision Adam, K = 12 (Rajbhandari et al. 2020, §5, Figure 1): stage 0: 16Ψ;
/// stage 1: 4Ψ + 12Ψ/N; stage 2: 2Ψ + 14Ψ/N; stage 3: 16Ψ/N. With bf16 weights and fp32
/// gradients it is Megatron-LM's 18Ψ, or 6Ψ + 12Ψ/N with its distributed optimizer (stage 1)
/// (Megatron Core developer guide, "Distributed Optimizer", bytes per parameter); fp32 training
/// is 16Ψ, 8Ψ + 8Ψ/N. `offload` moves the optimizer state (and with optimizer+params also the
/// weights and gradients, which ZeRO-Infinity streams in per layer) to host memory (ZeRO-Offload,
/// Ren et al. 2021; ZeRO-Infinity, Rajbhandari et al. 2021): those bytes leave the GPU.
/// Throws std::invalid_argument for zero outside 0..3, dp < 1, or gradients narrower than the
/// weights.
double model_state_bytes(double params, int zero, int dp, Offload offload = Offload::None,
                         double bytes_per_element = 2, double grad_bytes_per_element = 2);

/// Elements each GPU moves per step for data-parallel synchronisation of `params` parameters, in
/// units of Ψ = params (ZeRO §7.2): 2Ψ for an all-reduce (stage 0) and for stages 1 and 2 (a
/// reduce-scatter Ψ and an all-gather Ψ), 3Ψ for stage 3 (an all-gather in forward, another in
/// backward, a reduce-scatter of the gradients). Throws std::invalid_argument for zero outside
/// 0..3.
double dp_traffic_elements(double params, int zero);

/// Shape of one microbatch through one transformer layer: s tokens per sequence, b sequences,
/// hidden size h, a attention heads, feed-forward width f, tensor-parallel degree t.
struct LayerActivationShape {
  double s = 0, b = 0, h = 0, a = 0, f = 0;
  int t = 1;
  bool sequence_parallel = false;
  ModelFamily family = ModelFamily::Gpt2;
  /// r: the width of K (and of V) per GPU over Q's, with grouped-query attention
  /// max(n_kv_heads, t) / a (AttentionSplit::kv_held / a); 1 for multi-head attention.
  double kv_ratio = 1;
};

/// Bytes of activations one transformer layer keeps per microbatch on one GPU, at
/// bytes_per_element e per element.
///
/// gpt2: Korthikanti et al. 2022 Table 2, 16-bit figures scaled by e / 2:
///  - no recomputation: sbh(34 + 5as/h) at t = 1; sbh(10 + 24/t + 5as/(ht)) with tensor
///    parallelism; sbh(34/t + 5as/(ht)) with tensor and sequence parallelism;
///  - selective: the attention core (5as/h term) is recomputed: sbh(10 + 24/t), or 34sbh/t with
///    sequence parallelism;
///  - grouped-query attention: of the 24 bytes per sbh split over t, K and V are 2 each (their
///    §4.1: QKᵀ stores K, AV stores V); they shrink to 2r each, so 24 becomes 20 + 4r (and 34
///    under sequence parallelism 30 + 4r);
///  - full: only the layer input, 2sbh (2sbh/t with sequence parallelism, whose input is the
///    sequence shard).
///  Flash attention never stores the score and softmax tensors: the 5as/h term is dropped.
///
/// llama: what autograd saves in models/nn/llama_layers.cpp (checked against the counting CPU
/// allocator in tests/test_llama_activation_memory.cpp), counted the way Korthikanti et al.
/// count a GPT layer, small per-token terms (RMS factors, SDPA's log-sum-exp) left out:
///  - each of the two RMSNorms keeps its input upcast to fp32 (the input itself in fp32), its
///    normalised value and its output: 2·(4 + 2e)·sbh bytes, replicated over the
///    tensor-parallel group, divided by t with sequence parallelism;
///  - attention keeps the rotated q and k, v, and the attention output (flash: SDPA's output;
///    eager: the copy that feeds the output projection), 4 sbh elements, (2 + 2r)·sbh with
///    grouped-query attention (k and v at their own heads, not repeated to a); eager also keeps
///    the softmax, a·s·s·b, dropped by selective recomputation;
///  - SwiGLU keeps the gate and up projections, the SiLU output and their product, 4 sbf;
///  the last two divided by t. Full recomputation keeps only the layer input, e·sbh (/t with
///  sequence parallelism).
double layer_activation_bytes(const LayerActivationShape& shape, Recompute recompute,
                              Attention attention, double bytes_per_element);

/// Bytes by which layer_activation_bytes shrinks at precision fp8, where each linear layer saves
/// its quantized input (1 byte per element) for the backward instead of its bf16 input (e bytes),
/// as Transformer Engine does: (e − 1)·(sbh·(2/n + 1/t) + sbf/t) with n = t under sequence
/// parallelism, else 1 (the QKV and MLP up inputs, sbh/n each, the attention output
/// projection's, sbh/t, the down projection's, sbf/t); 0 under full recomputation (only the
/// layer input is kept). The column-wise copy is made again in the backward, not kept.
double fp8_saved_input_reduction(const LayerActivationShape& shape, Recompute recompute,
                                 double bytes_per_element);

/// Bytes of layer_activation_bytes that a split backward's I frees per microbatch (zero-bubble
/// pipelines, Qi et al. 2024), the rest staying until W; llama without recomputation only, 0
/// otherwise (all kept until W). W needs each linear's input (the two RMSNorm outputs, the
/// attention output, the SwiGLU product) and its output's gradient, which I stashes
/// (models/nn/split_linear.hpp): q, k, v (3 sbh; (1 + 2r)·sbh with grouped-query attention) and
/// the gate and up projections' (2 sbf), divided by t, and the attention and down projections'
/// whole outputs (2 sbh). I frees the two norms' fp32 inputs and normalised values,
/// 2·(4 + e)·sbh (divided by t with sequence parallelism), and, divided by t, the rotated q, k and
/// v (as many as their gradients), the eager softmax a·s·s·b and the gate, up and SiLU outputs:
/// net per layer at t = 1, 8·sbh + e·(a·s·s·b + sbf) bytes. Checked against the
/// counting CPU allocator in tests/test_llama_activation_memory.cpp.
double input_backward_freed_bytes(const LayerActivationShape& shape, Recompute recompute,
                                  Attention attention, double bytes_per_element);

/// Seconds of a ring reduce-scatter or all-gather of `bytes` (the full, unsharded size) over `n`
/// ranks: (n-1)(α + bytes/(n·β)) with β in bytes/s and α in seconds (Thakur et al. 2005). An
/// all-reduce is a reduce-scatter followed by an all-gather: twice this (Patarasuk & Yuan 2009).
/// 0 for n = 1.
double ring_half_seconds(double bytes, int n, double bandwidth, double latency);

}  // namespace dtwin
