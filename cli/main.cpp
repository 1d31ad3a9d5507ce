// dtwin: one schedule, simulated with SimGrid and executed with LibTorch. This executable holds
// the commands that need no LibTorch; it hands run, profile and train to dtwin-runtime.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/commands.hpp"
#include "cli/runtime_commands.hpp"
#include "cli/runtime_handoff.hpp"

int main(int argc, char** argv) {
  if (dtwin::needs_runtime(argc, argv)) return dtwin::exec_runtime(argv);
  CLI::App app{"dtwin: simulate and run distributed LLM training schedules"};
  int exit_code = 0;
  dtwin::add_schedule_command(app, exit_code);
  dtwin::add_simulate_command(app, exit_code);
  dtwin::add_compare_command(app, exit_code);
  dtwin::add_plan_command(app, exit_code);
  dtwin::add_keys_command(app, exit_code);
  dtwin::add_import_command(app, exit_code);
  // Listed for --help; never parsed here, since exec_runtime takes them first.
  for (const dtwin::CommandEntry& command : dtwin::kRuntimeCommands)
    app.add_subcommand(std::string(command.name), std::string(command.description));
  return dtwin::parse_and_run(app, argc, argv, exit_code);
}
