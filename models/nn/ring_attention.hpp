// Context parallelism's attention (layout.cp, cp_comm_type p2p): ring attention (Liu et al. 2023,
// "Ring Attention with Blockwise Transformers"; Transformer Engine's AttnFuncWithCPAndKVP2P).
// Each of the cp members of a c10d group holds 2 of the sequence's 2·cp equal chunks, chunk c and
// chunk 2·cp − 1 − c for member c, so that every member has the same share of the causal mask's
// work. A member attends with its queries to its own keys and values, then to each other
// member's, passed around the ring (member c sends to c + 1, receives from c − 1) while it
// computes, and merges the partial results by their log-sum-exp (Milakov & Gimelshein 2018).
//
// Shapes: b = batch, h = query heads, kv = key/value heads (h / kv query heads share one), Tc =
// the member's tokens (2·L, L = seq_len / (2·cp)), hd = head size.
//
// Bytes each member sends per call: the forward sends its current keys and values, 2·b·kv·Tc·hd
// elements, on each of cp − 1 ring steps; the backward sends the keys and values again on cp − 1
// steps and, on cp − 1 steps, the accumulated gradients of another member's keys and values
// (as many elements): twice the forward (models/cost/context_parallel.hpp's p2p closed form).
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstdint>

#include "models/nn/counted_group.hpp"

namespace dtwin::nn {

/// A rank's context-parallel group: the ring of `size` members, this one `rank`; bytes_sent
/// counts the keys, values and their gradients sent to the next member. size 1: the whole
/// sequence is local.
using ContextParallelGroup = CountedGroup;

/// The positions in a sequence of `seq_len` tokens that member cp.rank holds, in its order: chunk
/// cp.rank then chunk 2·cp.size − 1 − cp.rank of 2·cp.size equal chunks; int64 [seq_len / cp.size]
/// on `device`. Throws std::invalid_argument unless 2·cp.size divides seq_len.
torch::Tensor context_parallel_positions(int64_t seq_len, const ContextParallelGroup& cp,
                                         const torch::Device& device = torch::kCPU);

/// x [b, seq_len, ...] -> [b, seq_len / cp.size, ...], the member's tokens
/// (context_parallel_positions along dim 1); x itself when cp.size is 1.
torch::Tensor context_parallel_shard(const torch::Tensor& x, const ContextParallelGroup& cp);

/// How a block of ring attention is computed: Fused through ATen's CPU flash-attention kernels
/// (forward and backward, each returning or taking the log-sum-exp; CPU tensors only), Math
/// through explicit products (any device; its [b, h, Tc, Tc] scores live only inside a block).
enum class RingKernel { Fused, Math };

/// Causal attention of the member's queries q [b, h, Tc, hd] over the whole sequence's keys and
/// values, of which it holds k, v [b, kv, Tc, hd] (its context_parallel_positions, as are q's):
/// softmax(q·kᵀ/sqrt(hd) + causal mask)·v -> [b, h, Tc, hd], equal to the rows of
/// causal_attention on the whole sequence that the member holds. Every member must call it in
/// the same order (it passes messages around the ring). Differentiable in q, k and v: its
/// backward runs the ring again (keys and values out, their gradients back to their owner) and
/// takes the merged output and log-sum-exp, as flash attention's does (Dao 2023). `kernel`
/// Fused needs CPU tensors. Throws std::invalid_argument unless kv divides h and Tc is even.
torch::Tensor ring_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const ContextParallelGroup& cp, RingKernel kernel = RingKernel::Fused);

}  // namespace dtwin::nn
