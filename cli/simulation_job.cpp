#include "cli/simulation_job.hpp"

#include <filesystem>
#include <iostream>

#include "base/file_writer.hpp"
#include "cli/accuracy_cautions.hpp"
#include "cli/defaults_report.hpp"
#include "cli/output_dir.hpp"
#include "models/cost/cost_model.hpp"
#include "trace/summary_table.hpp"
#include "trace/timeline.hpp"

namespace dtwin {

std::optional<Profile> scenario_profile(const Scenario& scenario) {
  if (scenario.cluster.device.profile.empty()) return std::nullopt;
  std::filesystem::path path = scenario.cluster.device.profile;
  if (path.is_relative()) path = std::filesystem::path(scenario.source).parent_path() / path;
  Profile profile = load_profile(path.string());
  check_profile_matches(profile, scenario);
  return profile;
}

sim::SimOptions profiled_options(const Scenario& scenario, const Profile* profile) {
  sim::SimOptions options;
  options.profile = profile;
  options.seed = scenario.training.seed;
  if (profile)
    for (const StageSeconds& stage : profile->stages)
      if (stage.variation > 0) options.steps = kSampledSteps;
  return options;
}

sim::SimResult simulate_and_write(const Scenario& scenario, const sched::Schedule& schedule,
                                  const sim::SimOptions& options, const std::string& dir) {
  const CostModel cost(scenario);
  const sim::SimResult result = sim::simulate(scenario, schedule, cost, options);
  write_file(dir + "/predicted.trace.json", trace::to_chrome_trace(result.events, schedule.layout));
  write_file(dir + "/predicted.summary.json", trace::to_summary_json(result.summary));
  if (options.steps > 1)
    std::cout << "mean of " << options.steps << " sampled steps (the profile's variation), "
              << "their standard deviation " << result.summary.step_time_std_s * 1e3 << " ms\n";
  std::cout << trace::format_summary_table(result.summary, "predicted " + scenario.name,
                                           scenario.layout.tp);
  if (result.simulated_replicas < schedule.layout.dp)
    std::cout << "simulated data-parallel replicas 0-" << result.simulated_replicas - 1 << " of "
              << schedule.layout.dp << " (two nodes' worth): the others are their copies by "
              << "symmetry (replica d as d mod " << result.simulated_replicas
              << "); the trace holds the simulated ranks, --all-replicas simulates all\n";
  std::cout << defaults_report(scenario);
  for (const std::string& caution : accuracy_cautions(scenario))
    std::cout << "caution: " << caution << "\n";
  std::cout << "wrote " << dir << "/predicted.trace.json and predicted.summary.json\n";
  return result;
}

}  // namespace dtwin
