// What `dtwin profile` says about the model's GEMMs it measured.
#pragma once

#include <string>

#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin {

/// Prints the GEMM throughput of `profile.gemms` (each shape's TFLOP/s, then all together
/// against the scenario's peak_flops). Where the scenario names a device description
/// (cluster.device.model), also writes that description with gemm_efficiency replaced by the
/// one fitted to the measured seconds (fitted_gemm_efficiency) and, where the profile measured
/// them, host_op_overhead and host_op_overhead_no_grad by its host seconds per operator, to
/// `profile_path` with ".yaml" replaced by ".device.yaml", prints both efficiencies, the host
/// figures and the path, and returns the path; else returns "". Nothing when no GEMM was
/// measured.
std::string report_gemms(const Scenario& scenario, const Profile& profile,
                         const std::string& profile_path);

}  // namespace dtwin
