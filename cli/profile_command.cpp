#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/profile_cache.hpp"
#include "models/scenario_loader.hpp"
#include "runtime/capabilities.hpp"

namespace dtwin {
namespace {

struct ProfileCommandOptions {
  ScenarioOptions scenario;
  std::string output;
  std::string data_dir = "data";
};

int run_profile(const ProfileCommandOptions& options) {
  const Scenario scenario = load_scenario(options.scenario.path, options.scenario.overrides);
  rt::check_runtime_supports(scenario);
  const std::string path = measure_and_save_profile(scenario, options.data_dir, options.output);
  std::cout << "wrote " << path << "\n";
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ProfileCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "Measure F/B/I/W seconds per stage, p2p and all-reduce figures on this machine");
  add_scenario_options(*cmd, options->scenario);
  cmd->add_option("-o,--output", options->output,
                  "Profile file (default: this machine's cache, .cache/profiles/)");
  cmd->add_option("--data-dir", options->data_dir, "Folder of corpus.txt and the tokenizer cache");
  cmd->callback(
      [options, &exit_code] { exit_code = run_guarded([&] { return run_profile(*options); }); });
}

}  // namespace dtwin
