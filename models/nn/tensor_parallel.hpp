// Megatron-LM's tensor-parallel building blocks over a c10d group (Shoeybi et al. 2019,
// "Megatron-LM", §3 and Fig. 3): the conjugate operators f (identity forward, all-reduce of the
// gradient backward) and g (all-reduce forward, identity backward) that bracket a column-parallel
// then row-parallel pair of linear layers, the vocabulary-parallel embedding, and the
// vocabulary-parallel cross-entropy that never gathers the logits; and sequence parallelism
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// §4.2.2), where f and g become an all-gather and a reduce-scatter along the sequence. Every
// member of the group calls each of them in the same order (they are collectives).
#pragma once

#include <torch/torch.h>

#include "models/nn/counted_group.hpp"

namespace dtwin::nn {

/// A rank's tensor-parallel group: the c10d backend of its `size` members and its index in it,
/// and whether the activations between the parallel regions are split along the sequence.
/// size 1 (the default, no backend): no tensor parallelism, every operation below is the
/// unsplit one.
struct TensorParallelGroup : CountedGroup {
  bool sequence_parallel = false;

  /// Wall seconds this member has spent in the collectives below (from posting each to its
  /// completion), on whichever thread ran them (a backward's run on LibTorch's CUDA device
  /// threads): what a profile subtracts to split a pass into its compute and its
  /// tensor-parallel communication.
  double collective_seconds() const { return static_cast<double>(collective_ns->load()) / 1e9; }

  /// CPU seconds the member's process ran on threads other than the waiting one while it
  /// waited in the collectives below (CLOCK_PROCESS_CPUTIME_ID less CLOCK_THREAD_CPUTIME_ID):
  /// on the CPU, Gloo's work on the cores (c10d's ProcessGroupGloo runs a collective on a
  /// worker thread that copies and reduces, and its I/O threads move the bytes), which the
  /// other processes of a shared host lack meanwhile. Other threads' unrelated work (intra-op
  /// threads spinning, a send in flight) is counted too.
  double collective_helper_cpu_seconds() const {
    return static_cast<double>(helper_cpu_ns->load()) / 1e9;
  }
};

/// Megatron's f, before a column-parallel layer: returns x (sharing its storage); the backward
/// sums the gradient over the group. Any shape.
torch::Tensor copy_to_tensor_parallel(const torch::Tensor& x, const TensorParallelGroup& tp);

/// Megatron's g, after a row-parallel layer: the sum of every member's x (all-reduce); the
/// backward passes the gradient through. Any shape, the same on every member.
torch::Tensor reduce_from_tensor_parallel(const torch::Tensor& x, const TensorParallelGroup& tp);

/// Into a tensor-parallel region (before the column-parallel layers): x [b, s, d] ->
/// copy_to_tensor_parallel(x) [b, s, d], or under sequence parallelism x [b, s/t, d] -> the
/// member's sequence shards gathered in rank order [b, s, d], whose backward reduce-scatters the
/// gradient along the sequence. x itself when size is 1.
torch::Tensor enter_parallel_region(const torch::Tensor& x, const TensorParallelGroup& tp);

/// Out of a tensor-parallel region (after a row-parallel layer or the vocabulary-parallel
/// lookup, whose outputs are partial sums): x [b, s, d] -> reduce_from_tensor_parallel(x)
/// [b, s, d], or under sequence parallelism the sum's sequence shard rank [b, s/t, d]
/// (reduce-scatter along the sequence; the backward all-gathers the gradient). x itself when
/// size is 1. s must be a multiple of t under sequence parallelism.
torch::Tensor leave_parallel_region(const torch::Tensor& x, const TensorParallelGroup& tp);

/// The rows [rank·V/t, (rank+1)·V/t) of an embedding of V = t·weight_shard.size(0) tokens:
/// ids int64 [b, s] (global token ids) -> [b, s, d], each id looked up on the member that holds
/// its row and summed over the group (leave_parallel_region: [b, s/t, d] under sequence
/// parallelism). Gradients reach weight_shard's rows only.
torch::Tensor vocab_parallel_embedding(const torch::Tensor& ids, const torch::Tensor& weight_shard,
                                       const TensorParallelGroup& tp);

/// Mean cross-entropy over N positions of logits sharded by vocabulary: logits_shard [N, V/t]
/// holds columns [rank·V/t, (rank+1)·V/t) of the logits, targets int64 [N] global ids. The
/// group reduces the row maxima, the sums of exponentials and the target logits (three
/// all-reduces of N values), so no member holds [N, V] (Shoeybi et al. 2019 §3; Megatron-LM's
/// vocab_parallel_cross_entropy). Returns the same scalar on every member, in fp32; its backward
/// gives each member (softmax - one-hot(target)) / N on its own columns.
torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits_shard,
                                           const torch::Tensor& targets,
                                           const TensorParallelGroup& tp);

}  // namespace dtwin::nn
