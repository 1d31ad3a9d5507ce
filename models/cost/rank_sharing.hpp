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

}  // namespace dtwin
