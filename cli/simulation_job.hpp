// The simulate step shared by `dtwin simulate` and `dtwin run`.
#pragma once

#include <optional>
#include <string>

#include "models/profile.hpp"
#include "models/scenario.hpp"
#include "schedules/schedule.hpp"
#include "sim/simulator.hpp"

namespace dtwin {

/// The profile that cluster.device.profile names (a relative path is taken from the scenario
/// file's folder), checked against the scenario; nullopt when none is named.
std::optional<Profile> scenario_profile(const Scenario& scenario);

/// Simulates one step and writes DIR/predicted.trace.json and DIR/predicted.summary.json;
/// prints the summary table. Returns the result.
sim::SimResult simulate_and_write(const Scenario& scenario, const sched::Schedule& schedule,
                                  const sim::SimOptions& options, const std::string& dir);

}  // namespace dtwin
