// The bridge from a scenario to the validated schedule that every command executes.
#pragma once

#include "models/spec/scenario.hpp"
#include "schedules/schedule.hpp"

namespace dtwin {

/// The schedule layout of a scenario (dp, pp, virtual stages, microbatches, DP sync, ZeRO stage).
sched::Layout schedule_layout(const Scenario& scenario);

/// Generates the scenario's schedule, validates it as compute-only, lowers it unless
/// `compute_only`, and validates the result. Throws sched::ScheduleError if a generator or pass
/// breaks a rule, std::invalid_argument (a bug: the loader checks layouts) if the layout does not
/// suit the schedule or asks for ZeRO with a dp_sync other than allreduce.
sched::Schedule build_schedule(const Scenario& scenario, bool compute_only = false);

}  // namespace dtwin
