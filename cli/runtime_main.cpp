// dtwin-runtime: the dtwin commands that train or measure with LibTorch (run, profile, train,
// and plan --run).
// `dtwin run|profile|train ...` execs it with the same arguments; the launcher starts each rank
// as this executable.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/plan_training.hpp"
#include "runtime/cpu_scheduling.hpp"
#include "runtime/heap_policy.hpp"

int main(int argc, char** argv) {
  // Every rank, probe and profile alike, and the processes they start.
  dtwin::rt::keep_freed_heap_memory();
  if (!dtwin::rt::schedule_threads_as_batch())
    std::fprintf(stderr, "dtwin-runtime: warning: cannot run under SCHED_BATCH (%s)\n",
                 std::strerror(errno));
  CLI::App app{"dtwin: simulate and run distributed LLM training schedules"};
  int exit_code = 0;
  dtwin::add_run_command(app, exit_code);
  dtwin::add_profile_command(app, exit_code);
  dtwin::add_compute_probe_command(app, exit_code);
  dtwin::add_profile_member_command(app, exit_code);
  dtwin::add_train_command(app, exit_code, std::vector<std::string>(argv + 1, argv + argc));
  const dtwin::PlanTraining training = dtwin::runtime_plan_training();
  dtwin::add_plan_command(app, exit_code, &training);
  return dtwin::parse_and_run(app, argc, argv, exit_code);
}
