// Folding identical data-parallel replicas out of a simulation.
#pragma once

#include "models/spec/scenario.hpp"
#include "schedules/schedule.hpp"
#include "sim/collectives.hpp"
#include "trace/timeline.hpp"

namespace dtwin::sim {

/// The data-parallel replicas (dp indices 0 .. n-1) a simulation must run for its prediction to
/// be every replica's: layout.dp, or fewer when the others are copies by symmetry.
///
/// Replicas run the same action list with the same costs, and meet only in their data-parallel
/// collectives and on shared links. Let R = devices_per_node · ranks_per_device / tp be the
/// schedule ranks of one node; with dp a multiple of R, each node holds R consecutive replicas
/// of one pipeline rank. On a star, every node of a pipeline rank then carries the same flows:
/// its replicas' pipeline transfers to and from the same replicas' nodes, and one flow in and one
/// out of its link for each data-parallel ring (Flow model: each member sends the ring's whole
/// volume to the next). The replicas of 2 nodes, 2R, see exactly those loads — two nodes' rings
/// close across both nodes' links as a ring over dp / R nodes does — so simulating them, with
/// each ring's volume, step count and NCCL latency taken at the real group size (Group::size),
/// predicts the same times as all dp (tests/test_sim_replica_fold.cpp checks it).
///
/// Returns 2R when all of these hold, else layout.dp: dp > 2R, dp a multiple of R, one step
/// without a profile (sampled steps draw each rank's times apart), the Flow collective model, a
/// star topology (a fat-tree's spine is shared across nodes unevenly), dp_sync a ring (not
/// gather-scatter, whose root differs from its members), and no hybrid sharding.
int simulated_replicas(const Scenario& scenario, const sched::Layout& layout,
                       CollectiveModel collectives, int steps, bool profiled);

/// Gives each rank of a replica not simulated (dp index d >= replicas) in `summary` the compute,
/// communication and idle seconds of its representative, the rank of dp index d mod replicas on
/// the same pipeline rank (the same place in its node and in its rings), and recomputes the
/// bubble fraction as the mean of idle_s / step_time_s over every rank. No-op when replicas is
/// layout.dp.
void unfold_summary(trace::StepSummary& summary, const sched::Layout& layout, int replicas);

}  // namespace dtwin::sim
