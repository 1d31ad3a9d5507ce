// What `dtwin profile` says about the model's GEMMs it measured, and the device description
// fitted to them.
#pragma once

#include <string>

#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin {

/// Prints the GEMM throughput of `profile.gemms` (each shape's TFLOP/s, then all together
/// against the scenario's peak_flops), then, where the scenario names a device description,
/// writes the fitted one (save_fitted_description) to `profile_path` with ".yaml" replaced by
/// ".device.yaml" and prints both efficiencies, the host figures and the path. Returns that
/// path, or "" when nothing was written (no description named, or no GEMM measured).
std::string report_gemms(const Scenario& scenario, const Profile& profile,
                         const std::string& profile_path);

/// Writes to `path` the scenario's device description (cluster.device.model) with
/// gemm_efficiency fitted to the measured seconds of `profile.gemms` (fitted_gemm_efficiency)
/// and, where the profile measured them, host_op_overhead and host_op_overhead_no_grad replaced
/// by its host seconds per operator. Returns what changed, in words ("" and nothing written when
/// the scenario names no description or the profile has no GEMM).
std::string save_fitted_description(const Scenario& scenario, const Profile& profile,
                                    const std::string& path);

}  // namespace dtwin
