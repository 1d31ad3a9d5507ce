#include "cli/profile_cache.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>

#include "cli/gemm_report.hpp"
#include "cli/machine_load.hpp"
#include "models/cost/profile.hpp"
#include "models/cost/rank_sharing.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "runtime/calibrate/network_calibration.hpp"
#include "runtime/calibrate/profiler.hpp"

namespace dtwin {
namespace {

// Prints "WHAT with j others computing: j=0 0.110 ms j=1 ..." unless `seconds` is empty.
void print_per_busy_count(const char* what, const std::vector<double>& seconds) {
  if (seconds.empty()) return;
  std::printf("%s with j others computing:", what);
  for (size_t j = 0; j < seconds.size(); ++j) std::printf(" j=%zu %.3f ms", j, seconds[j] * 1e3);
  std::printf("\n");
}

}  // namespace

std::string measure_and_save_profile(const MachineJobOptions& job, const Scenario& scenario,
                                     const std::string& path, int co_tenants) {
  const std::string target = path.empty() ? rt::profile_cache_path(scenario) : path;
  std::printf("profiling %s on this machine into %s%s...\n", scenario.name.c_str(),
              std::filesystem::absolute(target).c_str(),
              path.empty() ? " (the profile cache; DTWIN_CACHE_DIR moves it)" : "");
  std::fflush(stdout);
  rt::ProfileOptions options;
  options.data_dir = job.data_dir;
  options.co_tenants = co_tenants;
  // The arguments that make this executable run the hidden `command` on the same scenario.
  const auto on_this_scenario = [&](const std::string& command) {
    std::vector<std::string> args{command};
    std::ranges::copy(job.scenario.args(), std::back_inserter(args));
    args.insert(args.end(), {"--data-dir", job.data_dir});
    return args;
  };
  options.probe_command = on_this_scenario("compute-probe");
  options.member_command = on_this_scenario("profile-member");
  const sched::Schedule schedule = build_schedule(scenario);
  options.schedule = &schedule;
  const CpuSample before = sample_cpu();
  const Profile profile = rt::measure_profile(scenario, options);
  const std::string caution =
      busy_machine_caution(others_cpu_share(before, sample_cpu()), "profiling");
  const std::filesystem::path parent = std::filesystem::path(target).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  save_profile(profile, target);
  if (!caution.empty()) std::printf("%s; re-measure on an idle machine\n", caution.c_str());
  std::printf(
      "%6s %10s %10s %10s %10s %10s %10s %10s   (ms, %d threads; sync: the gradient "
      "synchronisation's own work; variation: CV between steps)\n",
      "stage", "F", "B", "I", "W", "optim", "sync", "variation", profile.threads);
  for (size_t s = 0; s < profile.stages.size(); ++s) {
    const StageSeconds& t = profile.stages[s];
    std::printf("%6zu %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.3f\n", s, t.forward * 1e3,
                t.backward * 1e3, t.input_backward * 1e3, t.weight_backward * 1e3,
                t.optimizer * 1e3, t.sync_local * 1e3, t.variation);
  }
  if (scenario.layout.tp > 1 || scenario.layout.ep > 1)
    for (size_t s = 0; s < profile.stages.size(); ++s)
      std::printf(
          "stage %zu: %.2f ms of F and %.2f ms of B or I in %s, their helper threads %.2f and "
          "%.2f ms on the cores\n",
          s, profile.stages[s].tp_forward * 1e3, profile.stages[s].tp_backward * 1e3,
          scenario.layout.tp > 1 ? "tensor-parallel collectives" : "expert-parallel all-to-alls",
          profile.stages[s].tp_forward_cpu * 1e3, profile.stages[s].tp_backward_cpu * 1e3);
  if (profile.members_concurrency != 1)
    std::printf(
        "compute divided by x%.3f, the slowdown of the profile's %d members computing at once "
        "(the simulator applies the ranks' sharing of the cores itself)\n",
        profile.members_concurrency, profile_members(scenario));
  if (co_tenants > 0)
    std::printf(
        "stages timed with %d busy processes beside, the ranks of other nodes of this machine "
        "that compute at the same time in training\n",
        co_tenants);
  else if (profile.processes_sharing_cores != 1)
    std::printf(
        "figures timed as walls with the profile's %d processes sharing %d cores (the simulator "
        "slows a rank only while more compute on its host)\n",
        profile.processes_sharing_cores, scenario.cluster.device.cores);
  std::printf("p2p: latency %.1f us, bandwidth %.2f GB/s; %zu all-reduce points over %d ranks\n",
              profile.p2p_latency * 1e6, profile.p2p_bandwidth / 1e9, profile.allreduce.size(),
              profile.allreduce_ranks);
  if (!profile.p2p_concurrency.empty()) {
    std::printf("p2p slowdown with k transfers at once on one device:");
    for (size_t k = 0; k < profile.p2p_concurrency.size(); ++k)
      std::printf(" k=%zu x%.3f", k + 1, profile.p2p_concurrency[k]);
    std::printf("\n");
  }
  std::printf("slowdown with k ranks computing at once:");
  for (size_t k = 0; k < profile.concurrency.size(); ++k)
    std::printf(" k=%zu x%.3f", k + 1, profile.concurrency[k]);
  std::printf("\n");
  if (!profile.concurrency_variation.empty()) {
    std::printf("variation of one F or B with k ranks computing at once:");
    for (size_t k = 0; k < profile.concurrency_variation.size(); ++k)
      std::printf(" k=%zu %.3f", k + 1, profile.concurrency_variation[k]);
    std::printf("\n");
  }
  print_per_busy_count("wake delay after a 1 ms nap", profile.wake_delay);
  print_per_busy_count("late receive of one pipeline message", profile.late_receive);
  if (profile.p2p_cpu_s_per_byte > 0)
    std::printf("helper threads' CPU per byte of a pipeline message, both ends: %.3f ns\n",
                profile.p2p_cpu_s_per_byte * 1e9);
  report_gemms(scenario, profile, target);
  return target;
}

Profile measure_network(const Scenario& scenario, const rt::RankEnv& env) {
  constexpr int kRepeats = 5;
  // Bulk transfers (the gradients) set the link's sustained rate; a message smaller than a
  // switch's or shaper's burst buffer would measure the burst instead.
  constexpr double kBandwidthMessage = 4 << 20;
  const CostModel cost(scenario);
  Profile network;
  rt::calibrate_network(scenario, env, std::max(cost.boundary_bytes(), kBandwidthMessage),
                        cost.boundary_bytes(), rt::allreduce_sizes(cost), kRepeats, network);
  return network;
}

Profile with_network(Profile compute, const Profile& network) {
  compute.inter_host_latency = network.inter_host_latency;
  compute.inter_host_bandwidth = network.inter_host_bandwidth;
  compute.inter_host_queue_delay = network.inter_host_queue_delay;
  if (!network.allreduce.empty()) {
    compute.allreduce = network.allreduce;
    compute.allreduce_ranks = network.allreduce_ranks;
    compute.allreduce_across_hosts = network.allreduce_across_hosts;
  }
  return compute;
}

std::string cached_profile(const MachineJobOptions& job, const Scenario& scenario) {
  const std::string path = rt::profile_cache_path(scenario);
  if (std::filesystem::exists(path)) {
    std::printf("reusing the profile %s (the profile cache; DTWIN_CACHE_DIR moves it)\n",
                std::filesystem::absolute(path).c_str());
    return path;
  }
  return measure_and_save_profile(job, scenario, path);
}

}  // namespace dtwin
