#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/output_dir.hpp"
#include "cli/runtime_commands.hpp"
#include "cli/scenario_schedule.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/data/token_dataset.hpp"
#include "runtime/error_text.hpp"
#include "runtime/launcher.hpp"
#include "runtime/rank_env.hpp"
#include "runtime/rank_lost.hpp"
#include "runtime/trainer.hpp"
#include "schedules/user_error.hpp"

namespace dtwin {
namespace {

struct TrainCommandOptions : MachineJobOptions {
  bool resume = false;
  bool digests = false;
};

int run_train(const TrainCommandOptions& options, const std::vector<std::string>& args) {
  const Scenario scenario = options.scenario.load();
  const sched::Schedule schedule = build_schedule(scenario);
  rt::check_runtime_supports(scenario);
  rt::TrainOptions train;
  train.output_dir = prepare_output_dir(options.output, scenario);
  train.data_dir = options.data_dir;
  train.resume = options.resume;
  train.digests = options.digests;
  if (const auto env = rt::rank_env_from_environment()) {
    if (env->world_size != scenario.world_size())
      throw UserError("WORLD_SIZE: expected " + std::to_string(scenario.world_size()) +
                      " (dp*pp*tp of " + scenario.source + "), got '" +
                      std::to_string(env->world_size) + "'");
    rt::exit_on_stop_signals(env->rank);
    try {
      return rt::train_rank(scenario, schedule, *env, train);
    } catch (const rt::RankLost& lost) {
      // Leave at once: tearing down process groups with a dead peer can block.
      std::fprintf(stderr, "error: %s\n", lost.what());
      std::fflush(nullptr);
      std::_Exit(1);
    } catch (const UserError&) {
      throw;
    } catch (const std::exception& error) {
      // A failure of this rank alone (the disk is full, a checkpoint cannot be read): the
      // others are waiting for it, so leave at once rather than tear the groups down.
      std::fprintf(stderr, "error: rank %d: %s\n", env->rank, rt::error_text(error).c_str());
      std::fflush(nullptr);
      std::_Exit(1);
    }
  }
  // Launcher: a fresh run starts a fresh digest file; tokenize once here so that the ranks
  // only read the cache.
  if (!train.resume) std::filesystem::remove(train.output_dir + "/digests.csv");
  rt::TokenDataset(train.data_dir, scenario.model.vocab_size, scenario.model.seq_len);
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
