// Data-parallel collectives between simulated ranks, built from point-to-point messages.
#pragma once

#include <string>
#include <vector>

#include "sim/platform.hpp"

namespace dtwin::sim {

/// How a collective is simulated.
enum class CollectiveModel {
  Message,  ///< every message of the algorithm is a SimGrid communication (exact, O(N²) messages)
  Flow,     ///< one flow per rank carrying the algorithm's whole volume, plus its latency terms
};

/// The members of one collective, in ring order, and the calling rank's position.
struct Group {
  std::vector<int> ranks;
  int me = 0;
  std::string tag;  ///< unique name of this collective instance (mailbox prefix)
  /// Seconds each member waits after a ring's messages: under NCCL, the part of NCCL's latency
  /// that the messages' route latencies did not already take (0 otherwise).
  double extra_latency_s = 0;
  /// Members of the real collective when `ranks` holds only the simulated ones (replicas folded,
  /// sim/replica_fold.hpp; Flow model only); 0: ranks.size().
  int size = 0;

  /// The real collective's members: size, or ranks.size() when size is 0.
  int members() const { return size > 0 ? size : static_cast<int>(ranks.size()); }
};

/// Ring all-reduce of `bytes` per rank (Patarasuk & Yuan 2009): reduce-scatter then all-gather,
/// 2(N-1) steps of bytes/N to the next rank, so 2(N-1)(α + bytes/(N·β)) on a uniform star, each
/// step followed by its CPU work, platform.collective_cpu_s_per_byte · bytes/N seconds alone.
/// Message: each step is a real send to the next rank and a receive from the previous one.
/// Flow: one message of 2(N-1)·bytes/N to the next rank, then 2(N-1)-1 further route latencies
/// (the other steps' α); equal to Message when every step sees the same bandwidth, and it keeps
/// the flows' contention with each other and with other traffic on shared links. Either then
/// waits group.extra_latency_s. Call from the actor of group.ranks[group.me].
void ring_allreduce(const Group& group, double bytes, CollectiveModel model,
                    const Platform& platform);

/// Ring reduce-scatter or all-gather of `bytes` (the whole, unsharded size; each rank ends with or
/// starts from bytes/N): N-1 steps of bytes/N to the next rank, (N-1)(α + bytes/(N·β)) on a
/// uniform star (Thakur et al. 2005), each step followed by cpu_s_per_byte · bytes/N seconds of
/// CPU work alone; Message and Flow (and group.extra_latency_s) as for ring_allreduce.
void ring_half(const Group& group, double bytes, CollectiveModel model, const Platform& platform,
               double cpu_s_per_byte);

/// The largest route latency, in seconds, between neighbours of the ring of schedule ranks
/// `ranks` (each to the next, the last to the first).
double max_ring_latency(const std::vector<int>& ranks, const Platform& platform);

/// Gather-scatter: every rank sends `bytes` to group.ranks[0], which averages them and sends the
/// mean back to each: 2(N-1) messages of `bytes` through the root's links.
void gather_scatter(const Group& group, double bytes, const Platform& platform);

}  // namespace dtwin::sim
