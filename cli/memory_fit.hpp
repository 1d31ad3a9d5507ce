// Whether a predicted step fits the devices' memory, said out loud.
#pragma once

#include <string>

#include "models/spec/scenario.hpp"
#include "schedules/schedule.hpp"
#include "trace/timeline.hpp"

namespace dtwin {

/// Exit code of `dtwin simulate` and `dtwin run` when a rank's predicted peak exceeds what its
/// device can hold for tensors (memory_budget.hpp's tensor_memory_per_rank).
inline constexpr int kExitDoesNotFit = 3;

/// The memory figures of the simulator's summary without simulating: per rank of `schedule`
/// (one per tensor-parallel group), trace::fill_predicted_memory's peak and model-state bytes and
/// whether the peak fits the device (memory_ok); no times.
trace::StepSummary memory_summary(const Scenario& scenario, const sched::Schedule& schedule);

/// "" when every rank of `summary` fits (RankSummary::memory_ok), else one message naming the
/// rank with the largest peak, its peak, the capacity per rank and the peak's terms: model
/// states (weights, gradients, optimizer state; RankSummary::model_state_bytes) and the rest
/// (activations, workspaces and gathered weights at the peak), in GiB, and how many ranks do not
/// fit.
std::string memory_overflow_message(const Scenario& scenario, const trace::StepSummary& summary);

}  // namespace dtwin
