// The outputs of `dtwin plan`: the ranked table (stdout and plan.md) and plan.csv.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/layout_search.hpp"
#include "trace/timeline.hpp"

namespace dtwin {

/// One fitting layout, or the scenario's own, with its simulation when it was among the
/// simulated.
struct PlanRow {
  const LayoutCandidate* candidate = nullptr;
  std::optional<trace::StepSummary> simulated;
  std::optional<double> measured_tokens_per_s;  ///< plan --run: trained on this machine
  int group = 0;  ///< its group of alike layouts (group_alike), from 1; 0: an input not searched
  bool input = false;  ///< the scenario's own layout (LayoutSearch::input)
};

/// "tp 4 · pp 8 · dp 32 · mbs 1 · m 64 · interleaved-1f1b v2 · zero 1 · recompute none · sp",
/// then " · ep 8 · etp 1" for a MoE model and " · fp8" for fp8 training.
std::string describe_layout(const Scenario& scenario);

/// The Markdown table of the simulated rows, fastest simulated first: layout (with "+ N alike
/// (differing in ...)" for the rows of its group that were not simulated, and "(your layout)"),
/// estimated and simulated step seconds and the estimate's error, simulated tokens/s, MFU, bubble,
/// exposed communication (mean over ranks, seconds) and peak memory (GiB, the highest rank); with
/// measured rows (plan --run), their measured tokens/s too.
std::string plan_table(const std::vector<PlanRow>& rows);

/// Where the scenario's own layout stands, one line: "your layout (tp 1 · pp 4 · ...) ranks 37th
/// of 1,204 by estimated step time: 4.91 s vs the best 3.80 s, +29.2%", or why the search did not
/// keep it, then its simulated step against the best simulated one's of the search where it was
/// simulated.
/// `rows` hold the input's row where it has a candidate.
std::string input_line(const Scenario& base, const LayoutSearch& search,
                       const std::vector<PlanRow>& rows);

/// plan.md: what was searched (GPUs, global batch, layouts tried, kept, dropped per reason with
/// an example message), input_line and plan_table.
std::string plan_markdown(const std::string& title, const Scenario& base,
                          const LayoutSearch& search, const std::vector<PlanRow>& rows);

/// plan.csv: one line per row in the estimate's order, its layout keys, the estimate and, for
/// the simulated ones, the simulation's figures and measured tokens/s (empty otherwise), then ep,
/// etp (resolved: tp where unset), the training precision, cp, dp_shard, is_input (1 for the
/// scenario's own layout), group (PlanRow::group; 0 for the scenario's own layout where the search
/// did not keep it) and memory_limit_gib (what a rank's tensors may
/// use).
std::string plan_csv(const std::vector<PlanRow>& rows);

}  // namespace dtwin
