#include <iostream>

#include "cli/commands.hpp"
#include "cli/memory_fit.hpp"
#include "cli/output_dir.hpp"
#include "cli/simulation_job.hpp"
#include "models/cost/scenario_schedule.hpp"

namespace dtwin {
namespace {

struct SimulateOptions {
  ScenarioOptions scenario;
  std::string output;
  std::string collectives = "auto";
  std::optional<int> steps;
  bool all_replicas = false;
  bool allow_oom = false;
};

int run_simulate(const SimulateOptions& options) {
  const Scenario scenario = options.scenario.load();
  const sched::Schedule schedule = build_schedule(scenario);
  const std::optional<Profile> profile = scenario_profile(scenario);
  sim::SimOptions sim_options = profiled_options(scenario, profile ? &*profile : nullptr);
  if (options.steps) sim_options.steps = *options.steps;
  if (options.collectives == "message") sim_options.collectives = sim::CollectiveModel::Message;
  if (options.collectives == "flow") sim_options.collectives = sim::CollectiveModel::Flow;
  sim_options.fold_replicas = !options.all_replicas;
  const sim::SimResult result = simulate_and_write(scenario, schedule, sim_options,
                                                   prepare_output_dir(options.output, scenario));
  const std::string overflow = memory_overflow_message(scenario, result.summary);
  if (overflow.empty() || options.allow_oom) return 0;
  std::cerr << "error: " << overflow << "\n";
  return kExitDoesNotFit;
}

}  // namespace

void add_simulate_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] = add_guarded_command<SimulateOptions>(
      app, exit_code, "simulate", "Predict a training step with SimGrid", run_simulate);
  add_output_option(*cmd, options->output);
  cmd->add_option("--collectives", options->collectives,
                  "Collective model: message (every message), flow (one flow per rank), or auto "
                  "(message up to 32 ranks per group)")
      ->check(CLI::IsMember({"auto", "message", "flow"}));
  cmd->add_option("--steps", options->steps,
                  "Steps to simulate: 1 = the step of the profile's figures; default 64 sampled "
                  "steps where the profile measured variation, else 1")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--all-replicas", options->all_replicas,
                "Simulate every data-parallel replica (slower; the trace then holds every rank) "
                "instead of the two nodes' worth whose copies the others are (docs/simulator.md)");
  cmd->add_flag("--allow-oom", options->allow_oom,
                "Exit 0 when a rank's predicted peak exceeds its device's memory (default: exit 3 "
                "naming the rank, its peak and the capacity)");
}

}  // namespace dtwin
