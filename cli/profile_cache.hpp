// Measured profiles on disk: measure once per machine, model and layout, reuse after.
#pragma once

#include <string>

#include "models/scenario.hpp"

namespace dtwin {

/// Measures the scenario's profile (runtime/profiler.hpp) and saves it to `path`, or to its
/// cache path when `path` is empty; prints the stage table. Returns the path written.
std::string measure_and_save_profile(const Scenario& scenario, const std::string& data_dir,
                                     const std::string& path = "");

/// The cached profile of the scenario on this machine, measured first if absent.
std::string cached_profile(const Scenario& scenario, const std::string& data_dir);

}  // namespace dtwin
