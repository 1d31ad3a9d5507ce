// The `dtwin` subcommands and what they share: scenario options and the exit-code policy.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// Exit code for bad input: a malformed scenario, override or schedule request.
inline constexpr int kExitBadInput = 2;

/// A scenario file and its `--set key.path=value` overrides.
struct ScenarioOptions {
  std::string path;
  std::vector<std::string> overrides;

  /// The checked scenario (load_scenario). Throws ConfigError.
  Scenario load() const;
  /// The command-line arguments that give these options again: PATH, then --set OVERRIDE each.
  std::vector<std::string> args() const;
};

/// The options of the commands that train or measure a scenario on this machine (profile, train,
/// run): SCENARIO and --set, -o/--output ("" = the default folder) and --data-dir.
struct MachineJobOptions {
  ScenarioOptions scenario;
  std::string output;
  std::string data_dir = "data";
};

/// Adds the positional SCENARIO argument and the repeatable --set option.
void add_scenario_options(CLI::App& cmd, ScenarioOptions& options);

/// Adds -o,--output, stored in `output`; `help` says what it names.
void add_output_option(CLI::App& cmd, std::string& output,
                       const std::string& help = "Output folder (default out/<scenario name>)");

/// Adds --data-dir, the folder of corpus.txt and the tokenizer cache, stored in `data_dir`.
void add_data_dir_option(CLI::App& cmd, std::string& data_dir);

/// Runs a command body and maps failures to exit codes: bad input (UserError, ConfigError among
/// them) prints "error: ..." and returns 2; a schedule that breaks a validator rule returns 1 with
/// the validator's grid; a broken invariant (std::logic_error: invalid_argument, out_of_range, ...)
/// prints "internal error: ..." and returns 1; any other failure (I/O, a lost rank) prints
/// "error: ..." and returns 1.
int run_guarded(const std::function<int()>& body);

/// Parses the command line into `app` (named "dtwin", one subcommand required), which runs the
/// chosen subcommand's callback; returns `exit_code` as that callback left it, 0 for --help, or
/// kExitBadInput when the command line does not parse.
int parse_and_run(CLI::App& app, int argc, char** argv, const int& exit_code);

/// Adds the subcommand `name` to `app` with a default-made Options, which the subcommand's
/// callback keeps alive; when Options has a ScenarioOptions member `scenario`, also adds its
/// SCENARIO argument and --set. When the subcommand runs, `exit_code` becomes
/// run_guarded(run(options)). Returns the subcommand and the options, to add the rest.
template <typename Options, typename Run>
std::pair<CLI::App*, std::shared_ptr<Options>> add_guarded_command(CLI::App& app, int& exit_code,
                                                                   const std::string& name,
                                                                   const std::string& description,
                                                                   Run run) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(name, description);
  if constexpr (requires { options->scenario; }) add_scenario_options(*cmd, options->scenario);
  cmd->callback(
      [options, run, &exit_code] { exit_code = run_guarded([&] { return run(*options); }); });
  return {cmd, options};
}

void add_schedule_command(CLI::App& app, int& exit_code);
void add_simulate_command(CLI::App& app, int& exit_code);
void add_keys_command(CLI::App& app, int& exit_code);
/// `import {hf,megatron,torchtitan} SOURCE`: writes a scenario from another tool's configuration.
void add_import_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);
struct PlanTraining;
/// `training`: how dtwin-runtime trains layouts for `plan --run`; null in dtwin, which hands
/// `plan --run` to dtwin-runtime.
void add_plan_command(CLI::App& app, int& exit_code, const PlanTraining* training = nullptr);
void add_run_command(CLI::App& app, int& exit_code);
void add_profile_command(CLI::App& app, int& exit_code);
/// `compute-probe` (hidden): one process of the profile's concurrency probe
/// (runtime/calibrate/concurrency_probe.hpp); `profile` and `run` start it, not users.
void add_compute_probe_command(CLI::App& app, int& exit_code);
/// Registers the hidden `profile-member` command: one tensor-parallel member of a profile
/// (runtime/calibrate/profiler.hpp, run_profile_member), started by `profile` with layout.tp > 1.
void add_profile_member_command(CLI::App& app, int& exit_code);
/// `args`: the command line after the program name, which the launcher gives each rank.
void add_train_command(CLI::App& app, int& exit_code, const std::vector<std::string>& args);

}  // namespace dtwin
