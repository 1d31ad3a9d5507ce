#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/output_dir.hpp"
#include "cli/rank_training.hpp"
#include "cli/runtime_commands.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/launcher.hpp"
#include "runtime/rank_env.hpp"
#include "runtime/training_inputs.hpp"

namespace dtwin {
namespace {

struct TrainCommandOptions : MachineJobOptions {
  bool resume = false;
  bool digests = false;
};

int run_train(const TrainCommandOptions& options, const std::vector<std::string>& args) {
  const Scenario scenario = options.scenario.load();
  const sched::Schedule schedule = build_schedule(scenario);
  rt::check_runtime_supports(scenario, schedule);
  if (options.resume && scenario.layout.zero > 0)
    throw UserError(scenario.source +
                    ": layout.zero: expected 0 with --resume (a checkpoint holds the optimizer "
                    "state of replica 0's shard only), got " +
                    std::to_string(scenario.layout.zero));
  rt::corpus_path(options.data_dir);  // a missing corpus exits 2 before the output folder exists
  rt::TrainOptions train;
  train.output_dir = prepare_output_dir(options.output, scenario);
  train.data_dir = options.data_dir;
  train.resume = options.resume;
  train.digests = options.digests;
  if (const auto env = rt::rank_env_from_environment())
    return train_this_rank(scenario, schedule, *env, train);
  // Launcher: a fresh run starts a fresh digest file; tokenize once here so that the ranks
  // only read the cache.
  if (!train.resume) std::filesystem::remove(train.output_dir + "/digests.csv");
  rt::check_training_inputs(scenario, train.data_dir);
  std::cout << "training " << scenario.name << " on " << scenario.world_size()
            << " local ranks; output in " << train.output_dir << std::endl;
  return rt::launch_local(args, scenario.world_size(), scenario.runtime.timeout_s);
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code, const std::vector<std::string>& args) {
  auto [cmd, options] = add_guarded_command<TrainCommandOptions>(
      app, exit_code, std::string(kTrainCommand.name), std::string(kTrainCommand.description),
      [args](const TrainCommandOptions& options) { return run_train(options, args); });
  add_output_option(*cmd, options->output);
  add_data_dir_option(*cmd, options->data_dir);
  cmd->add_flag("--resume", options->resume, "Continue from the latest checkpoint in the output");
  cmd->add_flag("--digests", options->digests,
                "Write per-step parameter digests of every rank to OUT/digests.csv");
}

}  // namespace dtwin
