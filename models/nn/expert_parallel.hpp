// Expert parallelism (GShard, Lepikhin et al. 2020; Megatron-Core's alltoall token dispatcher):
// the routed experts of a MoE layer split over the members of a c10d group, each token copy sent
// to the member holding its expert by an all-to-all with per-member split sizes, and its output
// sent back by the reverse one. Every member calls these in the same order (they are
// collectives).
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstdint>
#include <vector>

#include "models/nn/counted_group.hpp"

namespace dtwin::nn {

/// A rank's expert-parallel group: member `rank` of `size` holds the experts
/// [rank·E/size, (rank + 1)·E/size) of each MoE layer; bytes_sent counts the token rows
/// (activations forward, their gradients backward) sent to the other members. size 1: every
/// expert is local.
using ExpertParallelGroup = CountedGroup;

/// Per-member counts exchanged: `counts` int64 [size·n] holds n counts for each member in member
/// order; returns int64 [size·n], the n counts each member sent to this one, in member order
/// (an all-to-all of equal splits; no autograd). `counts` itself when size is 1.
torch::Tensor exchange_counts(const torch::Tensor& counts, const ExpertParallelGroup& ep);

/// The rows of x [Σ send, ...] sent out: rows [Σ_{j<i} send[j], Σ_{j<=i} send[j]) to member i;
/// returns the rows received [Σ recv, ...], member by member, recv[i] from member i (which must
/// be what member i sends here). The backward is the reverse all-to-all of the gradient (recv
/// and send swapped). Counts the bytes sent to other members, forward and backward. x itself
/// when size is 1.
torch::Tensor all_to_all_rows(const torch::Tensor& x, const std::vector<int64_t>& send,
                              const std::vector<int64_t>& recv, const ExpertParallelGroup& ep);

}  // namespace dtwin::nn
