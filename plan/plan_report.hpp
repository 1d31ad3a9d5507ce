// The outputs of `dtwin plan`: the ranked table (stdout and plan.md) and plan.csv.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/layout_search.hpp"
#include "trace/timeline.hpp"

namespace dtwin {

/// One fitting layout with its simulation, when it was among the simulated.
struct PlanRow {
  const LayoutCandidate* candidate = nullptr;
  std::optional<trace::StepSummary> simulated;
  std::optional<double> measured_tokens_per_s;  ///< plan --run: trained on this machine
};

/// "tp 4 · pp 8 · dp 32 · mbs 1 · m 64 · interleaved-1f1b v2 · zero 1 · recompute none · sp",
/// then " · ep 8 · etp 1" for a MoE model and " · fp8" for fp8 training.
std::string describe_layout(const Scenario& scenario);

/// The Markdown table of the simulated rows, fastest simulated first: layout, estimated and
/// simulated step seconds and the estimate's error, simulated tokens/s, MFU, bubble, exposed
/// communication (mean over ranks, seconds) and peak memory (GiB, the highest rank); with
/// measured rows (plan --run), their measured tokens/s too.
std::string plan_table(const std::vector<PlanRow>& simulated);

/// plan.md: what was searched (GPUs, global batch, layouts tried, kept, dropped per reason with
/// an example message) and plan_table.
std::string plan_markdown(const std::string& title, const LayoutSearch& search,
                          const std::vector<PlanRow>& simulated);

/// plan.csv: one line per fitting layout in the estimate's order, its layout keys, the
/// estimate and, for the simulated ones, the simulation's figures and measured tokens/s (empty
/// otherwise), then ep, etp (resolved: tp where unset) and the training precision.
std::string plan_csv(const std::vector<PlanRow>& rows);

}  // namespace dtwin
