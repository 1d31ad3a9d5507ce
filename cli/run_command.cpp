// `dtwin run`: the main job — profile (or reuse the cache), simulate with the profile, train,
// compare and plot, with one summary at the end.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/compare_job.hpp"
#include "cli/output_dir.hpp"
#include "cli/plot_runner.hpp"
#include "cli/profile_cache.hpp"
#include "cli/runtime_commands.hpp"
#include "cli/scenario_schedule.hpp"
#include "cli/simulation_job.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/data/token_dataset.hpp"
#include "runtime/launcher.hpp"

namespace dtwin {
namespace {

struct RunOptions : MachineJobOptions {
  bool reprofile = false;
};

// The training command line the launcher gives each rank.
std::vector<std::string> train_args(const RunOptions& options, const std::string& dir,
                                    const std::string& profile) {
  std::vector<std::string> args{"train", options.scenario.path};
  for (const std::string& o : options.scenario.overrides) {
    args.push_back("--set");
    args.push_back(o);
  }
  args.insert(args.end(), {"--set", "cluster.device.profile=" + profile, "-o", dir, "--data-dir",
                           options.data_dir});
  return args;
}

// Draws OUT/timeline.png and OUT/loss.png with plots/ (the project's Python and matplotlib).
bool plot(const std::string& dir) {
  std::cout << std::flush;
  bool ok = true;
  for (const char* script : {"timeline.py", "loss.py"})
    ok &=
        run_python_script(DTWIN_PYTHON, std::string(DTWIN_SOURCE_DIR) + "/plots/" + script, {dir});
  return ok;
}

int run_main_job(const RunOptions& options) {
  Scenario scenario = options.scenario.load();
  const sched::Schedule schedule = build_schedule(scenario);
  rt::check_runtime_supports(scenario);
  const std::string dir = prepare_output_dir(options.output, scenario);
  rt::TokenDataset(options.data_dir, scenario.model.vocab_size, scenario.model.seq_len);

  std::cout << "== 1/5 profile\n";
  const std::string profile_path =
      std::filesystem::absolute(options.reprofile
                                    ? measure_and_save_profile(scenario, options.data_dir)
                                    : cached_profile(scenario, options.data_dir))
          .string();
  scenario.cluster.device.profile = profile_path;

  std::cout << "== 2/5 simulate\n";
  const std::optional<Profile> profile = scenario_profile(scenario);
  sim::SimOptions sim_options;
  sim_options.profile = &*profile;
  simulate_and_write(scenario, schedule, sim_options, dir);

  std::cout << "== 3/5 train (" << scenario.world_size() << " ranks)" << std::endl;
  std::filesystem::remove(dir + "/digests.csv");
  if (rt::launch_local(train_args(options, dir, profile_path), scenario.world_size(),
                       scenario.runtime.timeout_s) != 0)
    throw std::runtime_error("training failed; see the messages above");

  std::cout << "== 4/5 compare\n";
  const trace::Comparison comparison = compare_output_dir(dir);

  std::cout << "== 5/5 plot\n";
  const bool plotted = plot(dir);

  std::printf(
      "\n%s: predicted step %.1f ms, measured %.1f ms (error %+.1f%%); bubble predicted %.1f%%, "
      "measured %.1f%% (%+.1f points)\n",
      scenario.name.c_str(), comparison.step_time_s.predicted * 1e3,
      comparison.step_time_s.measured * 1e3, comparison.step_time_s.relative_error() * 100,
      comparison.bubble_fraction.predicted * 100, comparison.bubble_fraction.measured * 100,
      comparison.bubble_fraction.error() * 100);
  std::printf("files in %s: predicted.*, measured.*, loss.csv, compare.json, report.md%s\n",
              dir.c_str(), plotted ? ", timeline.png, loss.png" : "");
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] =
      add_guarded_command<RunOptions>(app, exit_code, std::string(kRunCommand.name),
                                      std::string(kRunCommand.description), run_main_job);
  add_output_option(*cmd, options->output);
  add_data_dir_option(*cmd, options->data_dir);
  cmd->add_flag("--reprofile", options->reprofile, "Measure the profile even if one is cached");
}

}  // namespace dtwin
