// The SimGrid half of `dtwin plan`: the best layouts simulated side by side, one child process
// each (SimGrid runs one engine per process), as many at once as the machine has cores.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plan/layout_search.hpp"
#include "trace/timeline.hpp"

namespace dtwin {

/// Simulates each of `candidates` (their scenarios) in a child process that writes
/// DIR/<index>.summary.json, and returns the summaries in order; nullopt for a layout whose
/// schedule could not be built or simulated (its child's message goes to stderr).
/// `progress(done, total)` is called as children end.
std::vector<std::optional<trace::StepSummary>> simulate_candidates(
    const std::vector<const LayoutCandidate*>& candidates, const std::string& dir,
    const std::function<void(int, int)>& progress);

}  // namespace dtwin
