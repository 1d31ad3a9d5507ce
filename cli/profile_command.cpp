#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/output_dir.hpp"
#include "cli/profile_cache.hpp"
#include "cli/rank_training.hpp"
#include "cli/runtime_commands.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "runtime/calibrate/concurrency_probe.hpp"
#include "runtime/calibrate/profiler.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/rank_env.hpp"

namespace dtwin {
namespace {

// Under torchrun-style variables every rank measures the network with the others, then rank 0
// profiles its host's compute (kept in the machine's cache) and writes both to -o, by default
// out/<scenario name>/profile.yaml: the network figures belong to this launch, not the machine.
int run_profile(const MachineJobOptions& options) {
  const Scenario scenario = options.scenario.load();
  rt::check_runtime_supports(scenario);
  rt::corpus_path(options.data_dir);  // a missing corpus exits 2 before any output folder exists
  const auto env = rt::rank_env_from_environment();
  if (!env) {
    std::cout << "wrote " << measure_and_save_profile(options, scenario, options.output) << "\n";
    return 0;
  }
  check_world_size(scenario, *env);
  const Profile network = measure_network(scenario, *env);
  if (env->rank != 0) return 0;
  const std::string path =
      options.output.empty() ? prepare_output_dir("", scenario) + "/profile.yaml" : options.output;
  save_profile(with_network(load_profile(measure_and_save_profile(options, scenario)), network),
               path);
  std::cout << "wrote " << path << "\n";
  return 0;
}

struct ProbeOptions : MachineJobOptions {
  int rank = 0;
  int store_port = 0;
};

int run_probe(const ProbeOptions& options) {
  return rt::run_compute_probe(options.scenario.load(), options.rank, options.data_dir,
                               options.store_port);
}

struct MemberOptions : MachineJobOptions {
  int member = 0;
  int store_port = 0;
};

int run_member(const MemberOptions& options) {
  const Scenario scenario = options.scenario.load();
  const sched::Schedule schedule = build_schedule(scenario);
  rt::ProfileOptions profile;
  profile.data_dir = options.data_dir;
  profile.schedule = &schedule;
  return rt::run_profile_member(scenario, options.member, options.store_port, profile);
}

}  // namespace

void add_profile_member_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] = add_guarded_command<MemberOptions>(
      app, exit_code, "profile-member", "One tensor-parallel member of a profile", run_member);
  cmd->group("");  // hidden: `profile` starts it
  add_data_dir_option(*cmd, options->data_dir);
  cmd->add_option("--member", options->member, "Index in the tensor-parallel group")->required();
  cmd->add_option("--store-port", options->store_port, "Port of member 0's store on 127.0.0.1")
      ->required();
}

void add_compute_probe_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] = add_guarded_command<ProbeOptions>(
      app, exit_code, "compute-probe", "One process of the profile's concurrency probe", run_probe);
  cmd->group("");  // hidden: `profile` starts it
  add_data_dir_option(*cmd, options->data_dir);
  cmd->add_option("--rank", options->rank, "Rank whose stages to run")->required();
  cmd->add_option("--store-port", options->store_port,
                  "Port of the store on 127.0.0.1 where probes 0 and 1 pair for the late receive");
}

void add_profile_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] =
      add_guarded_command<MachineJobOptions>(app, exit_code, std::string(kProfileCommand.name),
                                             std::string(kProfileCommand.description), run_profile);
  add_output_option(*cmd, options->output,
                    "Profile file (default: this machine's cache, .cache/profiles/)");
  add_data_dir_option(*cmd, options->data_dir);
}

}  // namespace dtwin
