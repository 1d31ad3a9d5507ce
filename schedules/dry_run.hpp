// Unit-time dry run of a schedule: every rank walks its list in order; an action starts when its
// rank is free and its inputs exist. F, I and W take 1 unit, B takes 2; sends, receives, the
// data-parallel collectives (ALLREDUCE, UNSHARD, REDUCE_GRAD), RESHARD and OPTIM take 0. The step
// count is a regression metric for generators, and a rank that can never proceed reveals a
// deadlock.
#pragma once

#include <vector>

#include "schedules/schedule.hpp"

namespace dtwin::sched {

/// The outcome of a unit-time dry run, in units (F, I, W = 1, B = 2, communication = 0).
struct DryRun {
  bool deadlocked = false;
  double step_units = 0;                   ///< time at which the last rank finishes
  std::vector<double> busy_units;          ///< per rank, compute time
  std::vector<std::vector<double>> start;  ///< per rank, per action (only for executed ones)
  std::vector<int> executed;  ///< per rank, actions executed (= list size unless deadlocked)

  /// Mean over ranks of idle / step time, in [0, 1).
  double bubble_fraction() const;
};

/// Unit cost of an action: 1 for F, I, W; 2 for B; 0 otherwise.
double unit_cost(ActionKind kind);

/// Runs the dry run. Inputs: F(s,i) needs F(s-1,i); B or I(s,i) needs F(s,i) and the input
/// gradient from B or I(s+1,i); W(s,i) needs I(s,i); RECV needs its SEND to have run; a
/// collective of stage s (ALLREDUCE, UNSHARD, REDUCE_GRAD) waits for every replica of stage s to
/// reach the same one (the n-th of that kind of stage s). Never throws; a schedule that
/// stalls returns deadlocked = true with `executed` marking where each rank stopped.
DryRun dry_run(const Schedule& schedule);

}  // namespace dtwin::sched
