// The simulate step shared by `dtwin simulate` and `dtwin run`.
#pragma once

#include <optional>
#include <string>

#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"
#include "schedules/schedule.hpp"
#include "sim/simulator.hpp"

namespace dtwin {

/// The profile that cluster.device.profile names (a relative path is taken from the scenario
/// file's folder), checked against the scenario; nullopt when none is named.
std::optional<Profile> scenario_profile(const Scenario& scenario);

/// Sampled steps whose mean is the prediction where actions vary: the mean's standard error is
/// the steps' spread / 8.
inline constexpr int kSampledSteps = 64;

/// The options `dtwin simulate` and `dtwin run` simulate with: `profile` (may be null), seeded by
/// training.seed, and kSampledSteps sampled steps where the profile measured a stage's variation
/// (StageSeconds::variation > 0), else 1, the deterministic step of the profile's figures (no
/// profile, or one made before variation was measured).
sim::SimOptions profiled_options(const Scenario& scenario, const Profile* profile);

/// Simulates options.steps steps and writes DIR/predicted.trace.json and
/// DIR/predicted.summary.json; prints the summary table (of the mean step with several). Returns
/// the result.
sim::SimResult simulate_and_write(const Scenario& scenario, const sched::Schedule& schedule,
                                  const sim::SimOptions& options, const std::string& dir);

}  // namespace dtwin
