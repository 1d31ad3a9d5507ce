// Measured profiles on disk: measure once per machine, model and layout, reuse after.
#pragma once

#include <string>

#include "cli/commands.hpp"
#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"
#include "runtime/rank_env.hpp"

namespace dtwin {

/// Measures the profile (runtime/calibrate/profiler.hpp) of `scenario`, the one `job` names, with
/// token batches from job.data_dir, and saves it to `path`, or to its cache path when `path` is
/// empty; prints the stage table, the concurrency curve and the GEMM throughput (report_gemms,
/// which writes the fitted device description beside it). `co_tenants`: rt::ProfileOptions's.
/// Returns the path written.
std::string measure_and_save_profile(const MachineJobOptions& job, const Scenario& scenario,
                                     const std::string& path = "", int co_tenants = 0);

/// The network of a torchrun-style launch as rank env.rank sees it (rt::calibrate_network with
/// 5 timed repetitions, messages of max(stage boundary bytes, 4 MiB) for bandwidth, the stage
/// boundary's bytes for the queue delay and the profile's all-reduce sizes): the figures on rank 0,
/// an empty profile elsewhere. Every rank must call it.
Profile measure_network(const Scenario& scenario, const rt::RankEnv& env);

/// `compute` with the network figures of `network` (rt::calibrate_network): its inter-host
/// latency, bandwidth and queue delay and, when it measured one, its all-reduce curve.
Profile with_network(Profile compute, const Profile& network);

/// The cached profile of the scenario on this machine, measured first if absent.
std::string cached_profile(const MachineJobOptions& job, const Scenario& scenario);

}  // namespace dtwin
