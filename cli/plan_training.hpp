// What `dtwin plan --run` needs from the runtime: which layouts it can train, and a short
// training run of one. Only dtwin-runtime, which links LibTorch, makes one.
#pragma once

#include <functional>
#include <string>

#include "cli/commands.hpp"
#include "plan/layout_search.hpp"

namespace dtwin {

struct PlanTraining {
  /// What `dtwin train` cannot execute in the scenario, each naming its key.
  std::function<std::vector<Violation>(const Scenario&)> check;
  /// Trains `candidate` (its sets over `base`) for `steps` steps (the first is a warm-up the
  /// measured summary leaves out) on this machine with the corpus in `data_dir`, writing into
  /// `dir`; returns the measured tokens/s (measured.summary.json). Throws std::runtime_error if
  /// training fails.
  std::function<double(const ScenarioOptions& base, const LayoutCandidate&, const std::string& dir,
                       const std::string& data_dir, int steps)>
      train;
};

/// The runtime's PlanTraining: rt::check_runtime_supports, and `dtwin-runtime train` of the
/// candidate through the local launcher.
PlanTraining runtime_plan_training();

}  // namespace dtwin
