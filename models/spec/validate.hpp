// validate(Scenario): the checks a typed scenario must pass, apart from reading it: each key's
// range (from the schema, models/spec/schema.hpp) and the rules that tie keys together (tp
// divides the heads, the layout fills the cluster, ...). The loader runs it on every scenario it
// reads and reports the first violation at its key's place in the file; the planner runs it on
// the layouts it builds.
#pragma once

#include <string>
#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// One broken rule.
struct Violation {
  /// The keys the rule ties together, in the order to blame them: the loader reports the first
  /// of them that a --set override gave, else the first that the file holds.
  std::vector<std::string> keys;
  std::string expected;  ///< what a valid scenario has ("a positive integer", "1 unless ...")

  /// "KEY: expected WHAT, got 'VALUE'" for the first key, its value from `scenario`.
  std::string message(const Scenario& scenario) const;
};

/// Every violation of `scenario`, in a fixed order: per-key ranges in schema order (optional keys
/// at their default are valid), then the model's rules, the layout's, training's and the
/// cluster's. Empty for a valid scenario. Does not load device descriptions: a scenario whose
/// cluster.device.model is set must carry it in cluster.device.description.
std::vector<Violation> validate(const Scenario& scenario);

}  // namespace dtwin
