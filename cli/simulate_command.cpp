#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/output_dir.hpp"
#include "cli/scenario_schedule.hpp"
#include "models/cost_model.hpp"
#include "models/profile.hpp"
#include "models/scenario_loader.hpp"
#include "schedules/summary_table.hpp"
#include "schedules/timeline.hpp"
#include "sim/simulator.hpp"

namespace dtwin {
namespace {

struct SimulateOptions {
  ScenarioOptions scenario;
  std::string output;
  std::string collectives = "auto";
};

// The profile that cluster.device.profile names, relative to the scenario file's folder.
std::optional<Profile> scenario_profile(const Scenario& scenario) {
  if (scenario.cluster.device.profile.empty()) return std::nullopt;
  std::filesystem::path path = scenario.cluster.device.profile;
  if (path.is_relative()) path = std::filesystem::path(scenario.source).parent_path() / path;
  Profile profile = load_profile(path.string());
  check_profile_matches(profile, scenario);
  return profile;
}

int run_simulate(const SimulateOptions& options) {
  const Scenario scenario = load_scenario(options.scenario.path, options.scenario.overrides);
  const sched::Schedule schedule = build_schedule(scenario);
  const CostModel cost(scenario);
  const std::optional<Profile> profile = scenario_profile(scenario);
  sim::SimOptions sim_options;
  sim_options.profile = profile ? &*profile : nullptr;
  if (options.collectives == "message") sim_options.collectives = sim::CollectiveModel::Message;
  if (options.collectives == "flow") sim_options.collectives = sim::CollectiveModel::Flow;
  const std::string dir = prepare_output_dir(options.output, scenario);

  const sim::SimResult result = sim::simulate(scenario, schedule, cost, sim_options);
  write_text_file(dir, "predicted.trace.json",
                  sched::to_chrome_trace(result.events, scenario.world_size()));
  write_text_file(dir, "predicted.summary.json", sched::to_summary_json(result.summary));
  std::cout << sched::format_summary_table(result.summary, "predicted " + scenario.name) << "wrote "
            << dir << "/predicted.trace.json and predicted.summary.json\n";
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Predict one training step with SimGrid");
  add_scenario_options(*cmd, options->scenario);
  cmd->add_option("-o,--output", options->output, "Output folder (default out/<scenario name>)");
  cmd->add_option("--collectives", options->collectives,
                  "Collective model: message (every message), flow (one flow per rank), or auto "
                  "(message up to 32 ranks per group)")
      ->check(CLI::IsMember({"auto", "message", "flow"}));
  cmd->callback(
      [options, &exit_code] { exit_code = run_guarded([&] { return run_simulate(*options); }); });
}

}  // namespace dtwin
