// `dtwin run`: the main job — profile (or reuse the cache), simulate with the profile, train,
// compare and plot, with one summary at the end; under torchrun-style variables, one rank of a
// launch over several hosts. A layout whose predicted peak does not fit exits 3 before training;
// --bracket profiles before and after training and predicts with both.
#include <fmt/format.h>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/file_writer.hpp"
#include "base/install_paths.hpp"
#include "base/user_error.hpp"
#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "cli/compare_job.hpp"
#include "cli/gemm_report.hpp"
#include "cli/machine_load.hpp"
#include "cli/memory_fit.hpp"
#include "cli/output_dir.hpp"
#include "cli/profile_cache.hpp"
#include "cli/rank_training.hpp"
#include "cli/runtime_commands.hpp"
#include "cli/runtime_handoff.hpp"
#include "cli/simulation_job.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/launcher.hpp"
#include "runtime/rank_env.hpp"
#include "runtime/training_inputs.hpp"

namespace dtwin {
namespace {

struct RunOptions : MachineJobOptions {
  bool reprofile = false;
  bool allow_oom = false;
  bool bracket = false;
};

// Prints "== i/n NAME" for the job's stages, in order.
class StageCounter {
 public:
  explicit StageCounter(int stages) : stages_(stages) {}
  void next(const std::string& name) {
    std::cout << "== " << ++done_ << "/" << stages_ << " " << name << std::endl;
  }

 private:
  int stages_;
  int done_ = 0;
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

// Draws OUT/timeline.png, OUT/loss.png and, for a mixture of experts, OUT/experts.png with
// plots/ (the project's Python and matplotlib).
bool plot(const std::string& dir) {
  std::cout << std::flush;
  bool ok = true;
  for (const char* script : {"timeline.py", "loss.py", "experts.py"}) {
    // Across hosts with a pipeline, loss.csv is on the last stage's host; a dense model has no
    // tokens_per_expert.csv.
    if (std::string(script) == "loss.py" && !std::filesystem::exists(dir + "/loss.csv")) continue;
    if (std::string(script) == "experts.py" &&
        !std::filesystem::exists(dir + "/tokens_per_expert.csv"))
      continue;
    ok &= run_child(
        {DTWIN_PYTHON, shared_folder("plots", DTWIN_SOURCE_DIR "/plots") + "/" + script, dir});
  }
  return ok;
}

// The prediction with the profile measured after training, beside the one measured before it and
// the measurement: one line, and OUT/bracket.json.
void report_bracket(const std::string& dir, double before_s, double after_s, double measured_s) {
  const double low = std::min(before_s, after_s), high = std::max(before_s, after_s);
  const std::string where =
      measured_s < low
          ? fmt::format("below both, {:+.1f}% beyond the bracket", (measured_s / low - 1) * 100)
      : measured_s > high
          ? fmt::format("above both, {:+.1f}% beyond the bracket", (measured_s / high - 1) * 100)
          : std::string("inside the bracket");
  std::printf(
      "bracket: predicted %.1f ms with the profile measured before training, %.1f ms with the one "
      "measured after (%+.1f%%); the measured %.1f ms lies %s\n",
      before_s * 1e3, after_s * 1e3, (after_s / before_s - 1) * 100, measured_s * 1e3,
      where.c_str());
  write_file(dir + "/bracket.json",
             nlohmann::json{{"predicted_before_s", before_s},
                            {"predicted_after_s", after_s},
                            {"measured_s", measured_s},
                            {"inside", measured_s >= low && measured_s <= high}}
                     .dump(2) +
                 "\n");
}

// Compares OUT's prediction with its measurement, plots, and prints the one-line summary.
// `others_share`: other processes' share of the CPU during training (others_cpu_share), or a
// negative value where it was not measured (training across hosts). `after_s`: the predicted step
// with the profile measured after training (--bracket), or nullopt.
int compare_plot_and_summarise(const Scenario& scenario, const std::string& dir,
                               StageCounter& stages, double others_share = -1,
                               std::optional<double> after_s = std::nullopt) {
  stages.next("compare");
  const trace::Comparison comparison = compare_output_dir(dir);

  stages.next("plot");
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
  if (after_s)
    report_bracket(dir, comparison.step_time_s.predicted, *after_s,
                   comparison.step_time_s.measured);
  std::printf("files in %s: predicted.*, measured.*, loss.csv, compare.json, report.md%s\n",
              dir.c_str(), plotted ? ", timeline.png, loss.png" : "");
  return 0;
}

// Simulates with the profile at `profile_path` into `dir`, and writes there the scenario's
// device description fitted to that profile (OUT/profile.device.yaml, where the scenario names
// one): this run's own, for `dtwin simulate --set cluster.device.model=...` of other layouts,
// where the cache's beside a reused profile may have been fitted for another description.
void simulate_with(Scenario scenario, const sched::Schedule& schedule,
                   const std::string& profile_path, const std::string& dir) {
  scenario.cluster.device.profile = profile_path;
  const std::optional<Profile> profile = scenario_profile(scenario);
  save_fitted_description(scenario, *profile, dir + "/profile.device.yaml");
  simulate_and_write(scenario, schedule, profiled_options(scenario, &*profile), dir);
}

// The predicted step (seconds) of `dtwin simulate` with the profile at `profile_path`, writing
// into `dir`. A child process: SimGrid runs one engine per process, and this one has run its own.
double simulate_in_child(const RunOptions& options, const std::string& profile_path,
                         const std::string& dir) {
  std::vector<std::string> words{beside_this_executable("dtwin"), "simulate"};
  std::ranges::copy(options.scenario.args(), std::back_inserter(words));
  words.insert(words.end(),
               {"--set", "cluster.device.profile=" + profile_path, "-o", dir, "--allow-oom"});
  std::cout << std::flush;
  if (!run_child(words))
    throw std::runtime_error("the simulation with " + profile_path + " failed");
  const std::optional<std::string> summary = read_file(dir + "/predicted.summary.json");
  if (!summary) throw std::runtime_error("no " + dir + "/predicted.summary.json was written");
  return trace::from_summary_json(*summary).step_time_s;
}

// Whether training may start: false, with the message on stderr, when a rank's predicted peak
// (of `summary`) exceeds its device's memory and --allow-oom was not given.
bool fits_or_allowed(const RunOptions& options, const Scenario& scenario,
                     const trace::StepSummary& summary) {
  const std::string overflow = memory_overflow_message(scenario, summary);
  if (overflow.empty() || options.allow_oom) return true;
  std::cerr << "error: " << overflow << " (nothing was run)\n";
  return false;
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
  StageCounter stages(6);
  stages.next(fmt::format("network (rank {} of {})", env.rank, env.world_size));
  const Profile network = measure_network(scenario, env);

  stages.next("train");
  rt::TrainOptions train;
  train.output_dir = dir;
  train.data_dir = options.data_dir;
  if (const int code = train_this_rank(scenario, schedule, env, train); code != 0 || env.rank != 0)
    return code;

  stages.next("profile");
  // More processes on this machine than the scenario puts on a node: nodes that are network
  // namespaces (or containers) of one machine, whose ranks share its cores in training. The
  // profile then times the compute beside as many busy processes, into OUT (not the cache).
  const int co_tenants = std::max(0, env.local_world_size - scenario.cluster.devices_per_node *
                                                                scenario.cluster.ranks_per_device);
  const std::string compute =
      co_tenants > 0
          ? measure_and_save_profile(options, scenario, dir + "/compute.profile.yaml", co_tenants)
      : options.reprofile ? measure_and_save_profile(options, scenario)
                          : cached_profile(options, scenario);
  const std::string profile_path = std::filesystem::absolute(dir + "/profile.yaml").string();
  save_profile(with_network(load_profile(compute), network), profile_path);

  stages.next("simulate");
  simulate_with(scenario, schedule, profile_path, dir);
  return compare_plot_and_summarise(scenario, dir, stages);
}

int run_main_job(const RunOptions& options) {
  const Scenario scenario = options.scenario.load();
  const sched::Schedule schedule = build_schedule(scenario);
  rt::check_runtime_supports(scenario, schedule);
  rt::corpus_path(options.data_dir);  // a missing corpus exits 2 before the output folder exists
  if (!fits_or_allowed(options, scenario, memory_summary(scenario, schedule)))
    return kExitDoesNotFit;
  const auto env = rt::rank_env_from_environment();
  if (env && options.bracket)
    throw UserError(
        "--bracket profiles this host before and after training; a launch across "
        "hosts (torchrun or Slurm variables set) profiles once, after training");
  const std::string dir = prepare_output_dir(options.output, scenario);
  rt::check_training_inputs(scenario, options.data_dir);  // tokenize once, check the inputs
  if (env) return run_across_hosts(options, scenario, schedule, *env, dir);

  StageCounter stages(options.bracket ? 6 : 5);
  stages.next(options.bracket ? "profile before training" : "profile");
  const std::string profile_path =
      std::filesystem::absolute(
          options.bracket
              ? measure_and_save_profile(options, scenario, dir + "/profile-before.yaml")
          : options.reprofile ? measure_and_save_profile(options, scenario)
                              : cached_profile(options, scenario))
          .string();

  stages.next("simulate");
  simulate_with(scenario, schedule, profile_path, dir);

  stages.next(fmt::format("train ({} ranks)", scenario.world_size()));
  std::filesystem::remove(dir + "/digests.csv");
  const CpuSample before = sample_cpu();
  if (rt::launch_local(train_args(options, dir, profile_path), scenario.world_size(),
                       scenario.runtime.timeout_s) != 0)
    throw std::runtime_error("training failed; see the messages above");
  const double others = others_cpu_share(before, sample_cpu());

  std::optional<double> after_s;
  if (options.bracket) {
    stages.next("profile after training, and simulate with it into after/");
    const std::string after =
        std::filesystem::absolute(
            measure_and_save_profile(options, scenario, dir + "/profile-after.yaml"))
            .string();
    after_s = simulate_in_child(options, after, dir + "/after");
  }
  return compare_plot_and_summarise(scenario, dir, stages, others, after_s);
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] =
      add_guarded_command<RunOptions>(app, exit_code, std::string(kRunCommand.name),
                                      std::string(kRunCommand.description), run_main_job);
  add_output_option(*cmd, options->output);
  add_data_dir_option(*cmd, options->data_dir);
  cmd->add_flag("--reprofile", options->reprofile, "Measure the profile even if one is cached");
  cmd->add_flag("--allow-oom", options->allow_oom,
                "Train even when a rank's predicted peak exceeds its device's memory (default: "
                "exit 3 before training, naming the rank, its peak and the capacity)");
  cmd->add_flag("--bracket", options->bracket,
                "Profile before and after training (no cache) and predict with both: says "
                "whether the measured step lies between the two predictions (one host only)");
}

}  // namespace dtwin
