// Expert parallelism (GShard, Lepikhin et al. 2020; Megatron-Core's alltoall token dispatcher):
// the routed experts of a MoE layer split over the members of a c10d group, each token copy sent
// to the member holding its expert by an all-to-all with per-member split sizes, and its output
// sent back by the reverse one. Every member calls these in the same order (they are
// collectives).
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace dtwin::nn {

/// A rank's expert-parallel group: `size` members, member `rank` holding the experts
/// [rank·E/size, (rank + 1)·E/size) of each MoE layer. size 1 (the default, no backend): every
/// expert is local and nothing is exchanged.
struct ExpertParallelGroup {
  c10::intrusive_ptr<c10d::Backend> backend;
  int rank = 0;
  int size = 1;
  /// Wall and helper-thread CPU nanoseconds of the all-to-alls; StageModule points them at its
  /// tensor-parallel group's counters, so that a pass's inner communication is one figure.
  std::shared_ptr<std::atomic<int64_t>> collective_ns = std::make_shared<std::atomic<int64_t>>(0);
  std::shared_ptr<std::atomic<int64_t>> helper_cpu_ns = std::make_shared<std::atomic<int64_t>>(0);
  /// Bytes of token rows (activations forward, their gradients backward) that this member's
  /// all-to-alls sent to the other members; the rows a member keeps are not counted.
  std::shared_ptr<std::atomic<int64_t>> bytes_sent = std::make_shared<std::atomic<int64_t>>(0);
};

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
