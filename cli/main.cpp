// dtwin: one schedule, simulated with SimGrid and executed with LibTorch.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"dtwin: simulate and run distributed LLM training schedules"};
  app.require_subcommand(1);
  int exit_code = 0;
  dtwin::add_schedule_command(app, exit_code);
  dtwin::add_simulate_command(app, exit_code);
  dtwin::add_compare_command(app, exit_code);
  dtwin::add_run_command(app, exit_code);
  dtwin::add_profile_command(app, exit_code);
  dtwin::add_train_command(app, exit_code, std::vector<std::string>(argv + 1, argv + argc));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : dtwin::kExitBadInput;
  }
  return exit_code;
}
