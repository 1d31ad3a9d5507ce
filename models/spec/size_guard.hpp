// A guard against layouts too large to lower and simulate on this machine.
#pragma once

#include <optional>

#include "models/spec/scenario.hpp"
#include "models/spec/validate.hpp"

namespace dtwin {

/// Bytes a simulation holds per action of the lowered schedule: its IR entry, its timed event
/// and its Chrome-trace text. Measured: `dtwin simulate --all-replicas` of
/// scenarios/deepseek-v3-2048gpu.yaml, 3.8M actions, peak RSS 1.85 GB (commit cf0dfd5).
inline constexpr double kBytesPerAction = 500;

/// Actions of the lowered schedule, estimated without building it: per schedule rank, each
/// microbatch of each of its virtual_stages chunks is an F, a B (or an I and a W) and at most
/// four pipeline sends and receives, plus 16 for its synchronisation and optimizer step; times
/// dp · pp ranks (tensor-parallel members share one list).
double estimated_actions(const LayoutSpec& layout);

/// A violation of layout.microbatches when estimated_actions · kBytesPerAction exceeds
/// `budget_bytes`, saying the estimate and the largest microbatch count that fits; nullopt
/// otherwise. O(1): it runs before anything is allocated.
std::optional<Violation> size_violation(const Scenario& scenario, double budget_bytes);

/// The budget of this machine: 80% of its physical memory (sysconf).
double machine_memory_budget();

}  // namespace dtwin
