#include "cli/profile_cache.hpp"

#include <cstdio>
#include <filesystem>

#include "models/profile.hpp"
#include "runtime/profiler.hpp"

namespace dtwin {

std::string measure_and_save_profile(const Scenario& scenario, const std::string& data_dir,
                                     const std::string& path) {
  const std::string target = path.empty() ? rt::profile_cache_path(scenario) : path;
  std::printf("profiling %s on this machine...\n", scenario.name.c_str());
  std::fflush(stdout);
  rt::ProfileOptions options;
  options.data_dir = data_dir;
  const Profile profile = rt::measure_profile(scenario, options);
  const std::filesystem::path parent = std::filesystem::path(target).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  save_profile(profile, target);
  std::printf("%6s %10s %10s %10s %10s %10s   (ms, %d threads)\n", "stage", "F", "B", "I", "W",
              "optim", profile.threads);
  for (size_t s = 0; s < profile.stages.size(); ++s) {
    const StageSeconds& t = profile.stages[s];
    std::printf("%6zu %10.2f %10.2f %10.2f %10.2f %10.2f\n", s, t.forward * 1e3, t.backward * 1e3,
                t.input_backward * 1e3, t.weight_backward * 1e3, t.optimizer * 1e3);
  }
  std::printf(
      "p2p: latency %.1f us, bandwidth %.2f GB/s; %zu all-reduce points over %d ranks; "
      "contention x%.3f\n",
      profile.p2p_latency * 1e6, profile.p2p_bandwidth / 1e9, profile.allreduce.size(),
      profile.allreduce_ranks, profile.contention);
  return target;
}

std::string cached_profile(const Scenario& scenario, const std::string& data_dir) {
  const std::string path = rt::profile_cache_path(scenario);
  if (std::filesystem::exists(path)) {
    std::printf("reusing the profile %s\n", path.c_str());
    return path;
  }
  return measure_and_save_profile(scenario, data_dir, path);
}

}  // namespace dtwin
