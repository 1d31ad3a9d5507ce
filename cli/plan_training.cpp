#include "cli/plan_training.hpp"

#include <stdexcept>

#include "base/file_writer.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/launcher.hpp"
#include "runtime/training_inputs.hpp"
#include "trace/timeline.hpp"

namespace dtwin {

PlanTraining runtime_plan_training() {
  PlanTraining training;
  training.check = [](const Scenario& scenario) {
    // Over NCCL the lowered schedule must keep each pipeline channel in order, as train checks.
    if (scenario.runtime.backend == Backend::Nccl) {
      const sched::Schedule schedule = build_schedule(scenario);
      return rt::runtime_violations(scenario, &schedule);
    }
    return rt::runtime_violations(scenario);
  };
  training.train = [](const ScenarioOptions& base, const LayoutCandidate& candidate,
                      const std::string& dir, const std::string& data_dir, int steps) {
    std::vector<std::string> args{"train", base.path};
    std::vector<std::string> sets = base.overrides;
    sets.insert(sets.end(), candidate.sets.begin(), candidate.sets.end());
    sets.push_back("training.steps=" + std::to_string(steps));
    sets.push_back("training.checkpoint_every=0");
    for (const std::string& set : sets) args.insert(args.end(), {"--set", set});
    args.insert(args.end(), {"-o", dir, "--data-dir", data_dir});
    const Scenario& scenario = candidate.scenario;
    rt::check_training_inputs(scenario, data_dir);  // once
    if (rt::launch_local(args, scenario.world_size(), scenario.runtime.timeout_s) != 0)
      throw std::runtime_error("plan --run: training " + dir + " failed; see the messages above");
    const std::optional<std::string> summary = read_file(dir + "/measured.summary.json");
    if (!summary) throw std::runtime_error("plan --run: " + dir + " has no measured summary");
    return trace::from_summary_json(*summary).tokens_per_s;
  };
  return training;
}

}  // namespace dtwin
