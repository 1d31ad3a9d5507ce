// The real network of a multi-host launch, measured by its ranks: what `dtwin run` and
// `dtwin profile` put in the profile so that the simulator predicts the links as they are.
#pragma once

#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"
#include "runtime/rank_env.hpp"

namespace dtwin::rt {

/// Run by every rank of a torchrun-style launch (`env`) at once. Rendezvous through a store on
/// MASTER_ADDR:MASTER_PORT + 1 (rank 0 hosts it), so that it never meets the training's store
/// on MASTER_PORT, and a Gloo group of all ranks bound as the training's. Ranks are placed on
/// hosts by the address that routes to MASTER_ADDR. Between the first ranks of every pair of
/// hosts: the one-way seconds of a 4-byte and of a `message_bytes` ping-pong; the medians over
/// pairs give profile.inter_host_latency and inter_host_bandwidth (bytes / (large - small)),
/// and inter_host_queue_delay: what late_receive_behind_seconds of `pipeline_bytes` (the stage
/// boundary's, the receive over a second group of its own connections) takes beyond the flow
/// the simulator gives the message (latency + bytes / bandwidth), never negative: the
/// simulator delays such a receive by it, then runs the flow.
/// Over the data-parallel group of stage 0 (layout.dp ranks): all-reduce seconds for each of
/// `allreduce_sizes` (bytes), with allreduce_across_hosts when its ranks are on different
/// hosts. Only rank 0's `profile` receives the figures; `repeats` timed repetitions each (4 x
/// `repeats` of the late receive). Throws std::runtime_error when the store cannot be hosted or
/// reached within runtime.timeout_s, or a peer is lost.
void calibrate_network(const Scenario& scenario, const RankEnv& env, double message_bytes,
                       double pipeline_bytes, const std::vector<double>& allreduce_sizes,
                       int repeats, Profile& profile);

}  // namespace dtwin::rt
