// The `dtwin` subcommands and what they share: scenario options and the exit-code policy.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace dtwin {

/// Exit code for bad input: a malformed scenario, override or schedule request.
inline constexpr int kExitBadInput = 2;

/// A scenario file and its `--set key.path=value` overrides.
struct ScenarioOptions {
  std::string path;
  std::vector<std::string> overrides;
};

/// Adds the positional SCENARIO argument and the repeatable --set option.
void add_scenario_options(CLI::App& cmd, ScenarioOptions& options);

/// Runs a command body and maps failures to exit codes: bad input (UserError, ConfigError among
/// them) prints "error: ..." and returns 2; a schedule that breaks a validator rule returns 1 with
/// the validator's grid; a broken invariant (std::logic_error: invalid_argument, out_of_range, ...)
/// prints "internal error: ..." and returns 1; any other failure (I/O, a lost rank) prints
/// "error: ..." and returns 1.
int run_guarded(const std::function<int()>& body);

void add_schedule_command(CLI::App& app, int& exit_code);
void add_simulate_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_profile_command(CLI::App& app, int& exit_code);
/// `args`: the command line after the program name, which the launcher gives each rank.
void add_train_command(CLI::App& app, int& exit_code, const std::vector<std::string>& args);

}  // namespace dtwin
