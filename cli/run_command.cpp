// `dtwin run`: the main job — profile (or reuse the cache), simulate with the profile, train,
// compare and plot, with one summary at the end; under torchrun-style variables, one rank of a
// launch over several hosts.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>

#include "base/install_paths.hpp"
#include "cli/commands.hpp"
#include "cli/compare_job.hpp"
#include "cli/machine_load.hpp"
#include "cli/output_dir.hpp"
#include "cli/plot_runner.hpp"
#include "cli/profile_cache.hpp"
#include "cli/rank_training.hpp"
#include "cli/runtime_commands.hpp"
#include "cli/simulation_job.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/data/token_dataset.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/launcher.hpp"
#include "runtime/rank_env.hpp"

namespace dtwin {
namespace {

struct RunOptions : MachineJobOptions {
  bool reprofile = false;
};

// The training command line the launcher gives each rank.
std::vector<std::string> train_args(const RunOptions& options, const std::string& dir,
                                    const std::string& profile) {
  std::vector<std::string> args{"train"};
  std::ranges::copy(options.scenario.args(), std::back_inserter(args));
  args.insert(args.end(), {"--set", "cluster.device.profile=" + profile, "-o", dir, "--data-dir",
                           options.data_dir});
  return args;
}

// Draws OUT/timeline.png and OUT/loss.png with plots/ (the project's Python and matplotlib).
bool plot(const std::string& dir) {
  std::cout << std::flush;
  bool ok = true;
  for (const char* script : {"timeline.py", "loss.py"}) {
    // Across hosts with a pipeline, loss.csv is on the last stage's host.
    if (std::string(script) == "loss.py" && !std::filesystem::exists(dir + "/loss.csv")) continue;
    ok &= run_python_script(
        DTWIN_PYTHON, shared_folder("plots", DTWIN_SOURCE_DIR "/plots") + "/" + script, {dir});
  }
  return ok;
}

// Compares OUT's prediction with its measurement, plots, and prints the one-line summary.
// `others_share`: other processes' share of the CPU during training (others_cpu_share), or a
// negative value where it was not measured (training across hosts).
int compare_plot_and_summarise(const Scenario& scenario, const std::string& dir,
                               const std::string& compare_step, const std::string& plot_step,
                               double others_share = -1) {
  std::cout << compare_step << " compare\n";
  const trace::Comparison comparison = compare_output_dir(dir);

  std::cout << plot_step << " plot\n";
  const bool plotted = plot(dir);

  std::printf(
      "\n%s: predicted step %.1f ms, measured %.1f ms (error %+.1f%%); bubble predicted %.1f%%, "
      "measured %.1f%% (%+.1f points)\n",
      scenario.name.c_str(), comparison.step_time_s.predicted * 1e3,
      comparison.step_time_s.measured * 1e3, comparison.step_time_s.relative_error() * 100,
      comparison.bubble_fraction.predicted * 100, comparison.bubble_fraction.measured * 100,
      comparison.bubble_fraction.error() * 100);
  if (others_share >= 0)
    std::cout << noise_report(comparison.step_time_s.measured, comparison.measured_step_std_s,
                              comparison.step_time_s.relative_error(), others_share)
              << "\n";
  std::printf("files in %s: predicted.*, measured.*, loss.csv, compare.json, report.md%s\n",
              dir.c_str(), plotted ? ", timeline.png, loss.png" : "");
  return 0;
}

void simulate_with(Scenario scenario, const sched::Schedule& schedule,
                   const std::string& profile_path, const std::string& dir) {
  scenario.cluster.device.profile = profile_path;
  const std::optional<Profile> profile = scenario_profile(scenario);
  simulate_and_write(scenario, schedule, profiled_options(scenario, &*profile), dir);
}

// `dtwin run` as one rank of a torchrun-style launch over several hosts: every rank measures the
// network (rt::calibrate_network), then trains; rank 0 then profiles its host's compute (or
// reuses the cache), writes OUT/profile.yaml with the measured network, simulates with it,
// compares and plots. Training comes before the profile so that no rank waits for rank 0's
// profiling at a rendezvous.
int run_across_hosts(const RunOptions& options, const Scenario& scenario,
                     const sched::Schedule& schedule, const rt::RankEnv& env,
                     const std::string& dir) {
  check_world_size(scenario, env);
  std::cout << "== 1/6 network (rank " << env.rank << " of " << env.world_size << ")" << std::endl;
  const Profile network = measure_network(scenario, env);

  std::cout << "== 2/6 train" << std::endl;
  rt::TrainOptions train;
  train.output_dir = dir;
  train.data_dir = options.data_dir;
  if (const int code = train_this_rank(scenario, schedule, env, train); code != 0 || env.rank != 0)
    return code;

  std::cout << "== 3/6 profile\n";
  const std::string compute = options.reprofile ? measure_and_save_profile(options, scenario)
                                                : cached_profile(options, scenario);
  const std::string profile_path = std::filesystem::absolute(dir + "/profile.yaml").string();
  save_profile(with_network(load_profile(compute), network), profile_path);

  std::cout << "== 4/6 simulate\n";
  simulate_with(scenario, schedule, profile_path, dir);
  return compare_plot_and_summarise(scenario, dir, "== 5/6", "== 6/6");
}

int run_main_job(const RunOptions& options) {
  const Scenario scenario = options.scenario.load();
  const sched::Schedule schedule = build_schedule(scenario);
  rt::check_runtime_supports(scenario, schedule);
  rt::corpus_path(options.data_dir);  // a missing corpus exits 2 before the output folder exists
  const std::string dir = prepare_output_dir(options.output, scenario);
  rt::TokenDataset(options.data_dir, scenario.model.vocab_size, scenario.model.seq_len);
  if (const auto env = rt::rank_env_from_environment())
    return run_across_hosts(options, scenario, schedule, *env, dir);

  std::cout << "== 1/5 profile\n";
  const std::string profile_path =
      std::filesystem::absolute(options.reprofile ? measure_and_save_profile(options, scenario)
                                                  : cached_profile(options, scenario))
          .string();

  std::cout << "== 2/5 simulate\n";
  simulate_with(scenario, schedule, profile_path, dir);

  std::cout << "== 3/5 train (" << scenario.world_size() << " ranks)" << std::endl;
  std::filesystem::remove(dir + "/digests.csv");
  const CpuSample before = sample_cpu();
  if (rt::launch_local(train_args(options, dir, profile_path), scenario.world_size(),
                       scenario.runtime.timeout_s) != 0)
    throw std::runtime_error("training failed; see the messages above");
  const double others = others_cpu_share(before, sample_cpu());
  return compare_plot_and_summarise(scenario, dir, "== 4/5", "== 5/5", others);
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
