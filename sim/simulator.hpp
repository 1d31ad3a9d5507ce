// dtwin's simulator: a lowered schedule executed by SimGrid actors on the scenario's platform.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"
#include "schedules/schedule.hpp"
#include "sim/collectives.hpp"
#include "trace/timeline.hpp"

namespace dtwin::sim {

/// How a simulation times communication and compute.
struct SimOptions {
  /// Collective model; nullopt picks Message for groups of at most kMessageGroupLimit ranks and
  /// Flow above (Flow's error against Message: tests/test_sim_network.cpp, "Flow all-reduce
  /// against Message").
  std::optional<CollectiveModel> collectives;
  /// Measured action seconds, replacing the FLOP-based times, slowed while ranks compute at once
  /// as its concurrency curve says; its p2p bandwidth and latency replace the scenario's
  /// intra-node link, and its inter-host figures, when measured, the inter-node link.
  const Profile* profile = nullptr;
  /// Steps simulated back to back, each starting when every rank has ended the one before (the
  /// runtime's loss all-reduce syncs the ranks at each step's end). With more than one, every
  /// F, B, I and W takes its seconds times an independent log-normal factor of mean 1 and the
  /// profile's variation for its stage (StageSeconds::variation), and a log-normal weight in
  /// the sharing of its host's cores (Profile::concurrency_variation), both drawn from `seed`;
  /// the summary is the mean over the steps (trace::summarize_steps): the expected step of actions
  /// that vary, which is longer than the step of their mean seconds wherever an action waits
  /// for the later of two. 1: the deterministic step of the profile's figures.
  int steps = 1;
  std::uint64_t seed = 0;
  /// Simulate only the replicas that symmetry requires (sim/replica_fold.hpp); false runs every
  /// replica, for a trace of every rank or to check the fold.
  bool fold_replicas = true;
};

inline constexpr int kMessageGroupLimit = 32;

/// A simulation: its predicted timeline and summary.
struct SimResult {
  std::vector<trace::TimedAction> events;  ///< one per executed action, predicted times
  trace::StepSummary summary;  ///< of the step, or the mean step; with peak memory and MFU
  /// Data-parallel replicas simulated (sim/replica_fold.hpp): layout.dp, or fewer when the others
  /// are copies by symmetry; `events` then holds the ranks of dp index below it only, and the
  /// summary every rank (a folded one's figures are its representative's).
  int simulated_replicas = 0;
};

/// Simulates options.steps training steps of `schedule` (lowered and validated) for `scenario`. One
/// S4U actor per rank walks its list: compute actions execute their FLOPs (or profiled seconds) on
/// the rank's host; SEND posts an asynchronous put and RECV waits for it, so transfers overlap
/// compute (a RECV that waited ends the profile's resume_delay later for the ranks computing on
/// its host then); ALLREDUCE runs the scenario's dp_sync over the stage's DP group, REDUCE_GRAD a
/// ring reduce-scatter and UNSHARD a ring all-gather (prefetched under
/// layout.overlap_param_gather); RESHARD takes no time. Events carry their step
/// (TimedAction::step, from 0). Creates the SimGrid engine, so it can run once per process.
SimResult simulate(const Scenario& scenario, const sched::Schedule& schedule, const CostModel& cost,
                   const SimOptions& options = {});

}  // namespace dtwin::sim
