// best.yaml of `dtwin plan`: a layout written as a complete scenario file, ready for
// `dtwin simulate` and `dtwin run`.
#pragma once

#include <string>
#include <vector>

#include "plan/layout_search.hpp"

namespace dtwin {

/// The scenario file at `path` with `overrides` (plan's --set) and then `layout`'s sets applied,
/// as YAML text (scenario_with_overrides: every key kept, comments dropped) under a comment
/// `header` (one line each, "# " prefixed). A device description or profile given by a relative
/// path is made absolute (they are taken from the scenario's folder), and cluster.device.profile
/// is cleared: the planner times compute from the nominal device, so that the file simulates to
/// the plan's figure.
std::string best_scenario_yaml(const std::string& path, const std::vector<std::string>& overrides,
                               const LayoutCandidate& layout,
                               const std::vector<std::string>& header);

}  // namespace dtwin
