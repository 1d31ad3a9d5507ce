// The kernel-level compute model of a GPU: the seconds one kernel takes, from its shape and a
// DeviceDescription. GEMMs are timed from their FLOPs at a shape-dependent efficiency (tile and
// wave quantization on the device's SMs) unless their memory traffic takes longer; attention
// from its FLOPs (flash) or as batched GEMMs plus the traffic of its score tensor (eager);
// element-wise and reduction kernels from the bytes they move. Pure arithmetic.
#pragma once

#include "models/spec/device_description.hpp"
#include "models/spec/settings.hpp"

namespace dtwin {

/// Seconds of a GEMM C[m×n] = A[m×k]·B[k×n], or of `batch` independent ones in one kernel,
/// with operands and result of `precision`:
///
///   max(2·m·n·k·batch / (peak · gemm_efficiency · quantization),
///       (m·k + k·n + m·n)·batch·element_bytes / (memory_bandwidth · memory_efficiency))
///   + kernel_overhead
///
/// The first term is the compute time. Each thread block computes one tile_m × tile_n tile of C
/// and one SM runs one block at a time, so the tiles = batch·⌈m/tile_m⌉·⌈n/tile_n⌉ run in
/// waves = ⌈tiles / sm_count⌉; quantization = m·n·batch / (waves · sm_count · tile_m · tile_n)
/// is the fraction of the SM-tile slots that hold useful work (tile and wave quantization, NVIDIA
/// Deep Learning Performance docs, "Matrix Multiplication Background User's Guide"). The second
/// term is the roofline's memory bound (Williams et al. 2009, "Roofline: An Insightful Visual
/// Performance Model"): each operand read once and the result written once; it governs only
/// GEMMs of small arithmetic intensity, such as eager attention's QKᵀ with k = head size.
double gemm_seconds(const DeviceDescription& device, double m, double n, double k,
                    Precision precision, double batch = 1);

/// Seconds of a kernel bound by memory bandwidth that reads and writes `bytes` in all:
/// bytes / (memory_bandwidth · memory_efficiency) + kernel_overhead.
double memory_bound_seconds(const DeviceDescription& device, double bytes);

/// The attention core of one layer on one GPU, from the Q, K and V projections to the input of
/// the output projection: softmax(Q·Kᵀ/√dh)·V per (sequence, head) pair, or its backward (the
/// gradients of Q, K and V; attention has no weights).
struct AttentionCore {
  double batch_heads = 0;  ///< independent (sequence, head) pairs on the GPU: b·a/tp
  double seq_len = 0;      ///< s, query positions (and key positions unless key_len is set)
  /// Key positions when they differ from the queries': the whole sequence s where context
  /// parallelism gives the GPU s/cp queries; 0 = seq_len.
  double key_len = 0;
  double head_dim = 0;  ///< dh = d/a
  Attention kind = Attention::Flash;
  bool dropout = false;  ///< dropout on the attention probabilities (gpt2)
  /// A causal mask (every model dtwin describes is a decoder): flash kernels skip the masked
  /// blocks (DeviceDescription::attention_causal_speedup); eager kernels compute them.
  bool causal = true;
  bool backward = false;  ///< the backward instead of the forward
};

/// FLOPs the kernels of `core` execute. Forward: QKᵀ and AV, 2·s·sk·dh each per pair (sk =
/// key_len, else s), 4·B·s·sk·dh with B = batch_heads, counted in full (no causal halving) as
/// CostModel does. Eager backward:
/// dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K and dK = dSᵀ·Q, twice the forward. Flash backward also
/// recomputes QKᵀ, 2.5 times the forward: the count that FlashAttention-2's backward throughput
/// (and so attention_backward_efficiency) is measured in (Dao 2023, section 4.1).
double attention_flops(const AttentionCore& core);

/// Seconds of `core` with operands of `precision`.
///  - flash: one fused kernel, attention_flops / (peak · attention_forward_efficiency, or
///    attention_backward_efficiency for the backward, · attention_causal_speedup when causal) +
///    kernel_overhead.
///  - eager: batched GEMMs (gemm_seconds, batch = batch_heads) plus element-wise kernels over
///    the score tensor of N = batch_heads·s² elements of e bytes. Forward: S = QKᵀ (s, s, dh);
///    scale, causal mask and softmax fused, reading S and writing P, 2·N·e; with dropout, reading
///    P and writing the dropped P and its one-byte mask, 2·N·e + N; then P·V (s, dh, s).
///    Backward: dP = dO·Vᵀ (s, s, dh) and dV = Pᵀ·dO (s, dh, s); with dropout, reading dP and the
///    mask and writing the gradient, 2·N·e + N; the softmax backward, reading P and dP and
///    writing dS, 3·N·e; then dQ = dS·K and dK = dSᵀ·Q (s, dh, s each).
double attention_seconds(const DeviceDescription& device, const AttentionCore& core,
                         Precision precision);

}  // namespace dtwin
