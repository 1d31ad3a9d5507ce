// How a schedule rank shares its device: the one rule that the simulator's platform and the
// planner's closed-form estimate both apply.
#pragma once

#include <algorithm>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// Members of a tensor-parallel group that share one device, and so one schedule rank's work:
/// all tp of them when ranks_per_device >= tp, else one (the others have devices of their own).
inline int members_per_device(const Scenario& s) {
  return std::min(s.layout.tp, s.cluster.ranks_per_device);
}

/// Cores one schedule rank computes on: its members' share of the device's cores, at least one.
inline int threads_per_rank(const Scenario& s) {
  return std::max(1, s.cluster.device.cores * members_per_device(s) / s.cluster.ranks_per_device);
}

/// Processes that profile together (runtime/calibrate/profiler.hpp, measure_profile): a
/// context-parallel group of tensor-parallel groups, layout.tp · layout.cp, or without either the
/// expert-parallel group's layout.ep.
inline int profile_members(const Scenario& s) {
  const LayoutSpec& l = s.layout;
  return l.tp * l.cp > 1 ? l.tp * l.cp : l.ep;
}

/// Schedule ranks whose members a profile runs at once: profile_members / layout.tp (cp, or ep
/// without tensor and context parallelism; 1 for a tensor-parallel group alone). They are
/// consecutive data-parallel indices of one pipeline rank, k·j .. k·j + k - 1 (the schedule's
/// index is dp_index·cp + cp_index, and expert parallelism folds inside dp×cp).
inline int profiled_schedule_ranks(const Scenario& s) {
  return profile_members(s) / s.layout.tp;
}

}  // namespace dtwin
