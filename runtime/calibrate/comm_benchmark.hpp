// Communication figures for the profile: point-to-point latency and bandwidth, all-reduce
// seconds, over the scenario's backend on its device.
#pragma once

#include <vector>

#include <torch/types.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin::rt {

/// Median one-way seconds of `repeats` ping-pongs of `bytes` with rank `peer` of `group` (after
/// 2 untimed): half the round trip. The rank that `starts` sends first; the peer calls it with
/// starts = false. The buffer lives on `device`; on a GPU each operation's time runs until the
/// device finished it.
double one_way_seconds(c10d::Backend& group, int peer, bool starts, double bytes, int repeats,
                       const torch::Device& device = torch::kCPU);

/// Seconds of a receive posted late behind a `bytes` message going the other way, as 1F1B's
/// last stage posts the next activation's receive right after it starts sending a gradient:
/// the rank that `starts` posts a `bytes` send to `peer` on `bulk`, then the receive of a
/// `bytes` message that the peer had already posted on `crossing` (other connections, so that
/// the receive's ready message waits behind the send only in the link's queue). The median of
/// `repeats` (after 2 untimed), from the send's posting to the receive's end on the starting
/// rank, 0 on the peer, which calls it with starts = false. Host tensors.
double late_receive_behind_seconds(c10d::Backend& bulk, c10d::Backend& crossing, int peer,
                                   bool starts, double bytes, int repeats);

/// The median seconds of `repeats` all-reduces (after 2 untimed, each after a barrier) of every
/// size in `sizes` (bytes of fp32 on `device`) over `group`; every member calls it.
std::vector<AllReducePoint> allreduce_points(c10d::Backend& group, const std::vector<double>& sizes,
                                             int repeats,
                                             const torch::Device& device = torch::kCPU);

/// As allreduce_points for ZeRO's collectives, each size the whole (unsharded) bytes: the
/// all-gather of every member's 1/n into the whole when `gather`, else the reduce-scatter of the
/// whole into each member's 1/n (c10d's _allgather_base and _reduce_scatter_base, as the
/// runtime's UNSHARD and REDUCE_GRAD call them).
std::vector<AllReducePoint> half_ring_points(c10d::Backend& group, const std::vector<double>& sizes,
                                             int repeats, bool gather,
                                             const torch::Device& device = torch::kCPU);

/// Runs ranks as threads of this process (run_as_thread_group): on runtime.device, over
/// runtime.backend where it can (NCCL needs a GPU per rank; the point-to-point figures fall back
/// to Gloo on a host with one GPU, whose one rank then has nothing to send, and the all-reduce
/// curves are left out, allreduce_ranks 0, when there are fewer GPUs than ranks). Sets
/// profile.p2p_latency (one_way_seconds of a 4-byte message) and p2p_bandwidth (bytes / (one-way
/// time of `message_bytes` - latency)), each over max(`repeats`, 200) ping-pongs, and, for
/// `allreduce_ranks` >= 2, one all-reduce point per size in `allreduce_bytes` (median seconds of
/// `repeats`) over that many ranks, and with `sharded` (layout.zero > 0) the all-gather and
/// reduce-scatter points of the same sizes.
void measure_communication(Profile& profile, double message_bytes, int allreduce_ranks,
                           const std::vector<double>& allreduce_bytes, int repeats, bool sharded,
                           const RuntimeSpec& runtime);

/// Slowdown of one point-to-point transfer of `message_bytes` between two ranks of this host
/// while k = 1 ... `pairs` pairs of its ranks transfer at once (Profile::p2p_concurrency): ranks
/// as 2·pairs threads of this process over Gloo (run_as_thread_group, on runtime.device, so a
/// GPU's ranks go through host copies), pair i being ranks 2i and 2i+1. For each k, after a
/// barrier, the first k pairs each time `repeats` ping-pongs (one_way_seconds) while the others
/// wait; element k-1 is their mean one-way seconds over pair 0's with k = 1, so element 0 is 1.
/// `pairs` >= 1.
std::vector<double> p2p_concurrency(double message_bytes, int pairs, int repeats,
                                    const RuntimeSpec& runtime);

}  // namespace dtwin::rt
