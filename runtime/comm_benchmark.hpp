// Communication figures for the profile: point-to-point latency and bandwidth, all-reduce
// seconds, over the scenario's backend on its device.
#pragma once

#include <vector>

#include <torch/types.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "models/profile.hpp"
#include "models/scenario.hpp"

namespace dtwin::rt {

/// Median one-way seconds of `repeats` ping-pongs of `bytes` with rank `peer` of `group` (after
/// 2 untimed): half the round trip. The rank that `starts` sends first; the peer calls it with
/// starts = false. The buffer lives on `device`; on a GPU each operation's time runs until the
/// device finished it.
double one_way_seconds(c10d::Backend& group, int peer, bool starts, double bytes, int repeats,
                       const torch::Device& device = torch::kCPU);

/// Seconds a 4-byte message from the rank that `starts` to rank `peer` waits behind a `bytes`
/// message it posted just before, on `bulk`, in the same direction: the median round trip of a
/// 4-byte exchange over `small` (another connection) started with the bulk message, less the
/// median round trip of one alone; `repeats` of each (after 2 untimed), never negative. The peer
/// calls it with starts = false. Every message's receive is posted, and its ready message has
/// reached the sender, before the timing starts, so the round trips time the link: its latency,
/// and the queue that the bulk message builds in its buffers. Host tensors.
double queue_delay_seconds(c10d::Backend& bulk, c10d::Backend& small, int peer, bool starts,
                           double bytes, int repeats);

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
