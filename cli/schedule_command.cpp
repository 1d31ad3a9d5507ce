#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "schedules/dry_run.hpp"
#include "schedules/format.hpp"

namespace dtwin {
namespace {

struct ScheduleOptions {
  ScenarioOptions scenario;
  bool compute_only = false;
  bool dry_run = false;
  std::string format = "text";
};

int run_schedule(const ScheduleOptions& options) {
  const Scenario scenario = options.scenario.load();
  const sched::Schedule schedule = build_schedule(scenario, options.compute_only);
  const sched::DryRun dry = sched::dry_run(schedule);
  if (options.format == "json") {
    std::cout << sched::to_json(schedule, options.dry_run ? &dry : nullptr);
    return 0;
  }
  std::cout << (options.format == "csv" ? sched::to_csv(schedule) : sched::to_text(schedule));
  if (options.dry_run) {
    std::printf("# dry run (F, I, W = 1 unit, B = 2, communication = 0): %g units, bubble %.4f\n",
                dry.step_units, dry.bubble_fraction());
  }
  return 0;
}

}  // namespace

void add_schedule_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] = add_guarded_command<ScheduleOptions>(
      app, exit_code, "schedule", "Print the validated schedule of a scenario", run_schedule);
  cmd->add_flag("--compute-only", options->compute_only,
                "Print the generator's F/B/I/W actions without communication, sync or OPTIM");
  cmd->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "csv", "json"}));
  cmd->add_flag("--dry-run", options->dry_run,
                "Add the unit-time step count and bubble fraction of the schedule");
}

}  // namespace dtwin
