#include "cli/memory_fit.hpp"

#include <fmt/format.h>

#include "models/cost/cost_model.hpp"
#include "models/cost/memory_budget.hpp"
#include "trace/step_figures.hpp"

namespace dtwin {

trace::StepSummary memory_summary(const Scenario& scenario, const sched::Schedule& schedule) {
  const CostModel cost(scenario);
  trace::StepSummary summary;
  summary.ranks.resize(schedule.layout.group_count());
  trace::fill_predicted_memory(summary, schedule, cost);
  trace::fill_step_figures(summary, scenario, cost);  // memory_ok; no step time
  return summary;
}

std::string memory_overflow_message(const Scenario& scenario, const trace::StepSummary& summary) {
  int over = 0, worst = -1;
  for (int r = 0; r < static_cast<int>(summary.ranks.size()); ++r) {
    if (summary.ranks[r].memory_ok) continue;
    ++over;
    if (worst < 0 || summary.ranks[r].peak_memory_bytes > summary.ranks[worst].peak_memory_bytes)
      worst = r;
  }
  if (worst < 0) return "";
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const trace::RankSummary& rank = summary.ranks[worst];
  const int tp = scenario.layout.tp;
  const std::string who = tp > 1 ? fmt::format("ranks {}-{} (tensor-parallel group {})", worst * tp,
                                               worst * tp + tp - 1, worst)
                                 : fmt::format("rank {}", worst);
  return fmt::format(
      "the layout does not fit: {} of {} ranks exceed the device's memory; {} peaks at {:.2f} GiB "
      "where a rank can hold {:.2f} GiB of tensors ({:.2f} GiB of model states: weights, "
      "gradients and optimizer state; {:.2f} GiB of activations, workspaces and gathered weights "
      "at the peak). Shard more (layout.zero, tp, pp), recompute (layout.recompute), or pass "
      "--allow-oom to go on regardless",
      over * tp, summary.ranks.size() * tp, who, rank.peak_memory_bytes / kGiB,
      tensor_memory_per_rank(scenario.cluster) / kGiB, rank.model_state_bytes / kGiB,
      (rank.peak_memory_bytes - rank.model_state_bytes) / kGiB);
}

}  // namespace dtwin
