#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/profile_cache.hpp"
#include "cli/runtime_commands.hpp"
#include "runtime/capabilities.hpp"

namespace dtwin {
namespace {

int run_profile(const MachineJobOptions& options) {
  const Scenario scenario = options.scenario.load();
  rt::check_runtime_supports(scenario);
  const std::string path = measure_and_save_profile(scenario, options.data_dir, options.output);
  std::cout << "wrote " << path << "\n";
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] =
      add_guarded_command<MachineJobOptions>(app, exit_code, std::string(kProfileCommand.name),
                                             std::string(kProfileCommand.description), run_profile);
  add_output_option(*cmd, options->output,
                    "Profile file (default: this machine's cache, .cache/profiles/)");
  add_data_dir_option(*cmd, options->data_dir);
}

}  // namespace dtwin
