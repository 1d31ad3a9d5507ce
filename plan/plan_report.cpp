#include "plan/plan_report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtwin {
namespace {

constexpr double kGiB = 1 << 30;

double mean_comm_s(const trace::StepSummary& s) {
  if (s.ranks.empty()) return 0;
  double sum = 0;
  for (const trace::RankSummary& r : s.ranks) sum += r.comm_s;
  return sum / s.ranks.size();
}

double peak_bytes(const trace::StepSummary& s) {
  double peak = 0;
  for (const trace::RankSummary& r : s.ranks) peak = std::max(peak, r.peak_memory_bytes);
  return peak;
}

}  // namespace

std::string describe_layout(const Scenario& scenario) {
  const LayoutSpec& l = scenario.layout;
  std::string schedule(sched::kScheduleKindNames.name(l.schedule));
  if (l.schedule == sched::ScheduleKind::Interleaved1F1B)
    schedule += " v" + std::to_string(l.virtual_stages);
  std::string out =
      fmt::format("tp {} · pp {} · dp {} · mbs {} · m {} · {} · zero {} · recompute {}{}", l.tp,
                  l.pp, l.dp, l.micro_batch_size, l.microbatches, schedule, l.zero,
                  kRecomputeNames.name(l.recompute), l.sequence_parallel ? " · sp" : "");
  if (l.cp > 1) out += fmt::format(" · cp {}", l.cp);
  if (l.hybrid_shard()) out += fmt::format(" · dp_shard {}", l.dp_shard);
  if (scenario.model.moe.enabled()) out += fmt::format(" · ep {} · etp {}", l.ep, l.expert_tp());
  if (scenario.training.precision == Precision::Fp8) out += " · fp8";
  return out;
}

std::string plan_table(const std::vector<PlanRow>& simulated) {
  std::vector<PlanRow> rows = simulated;
  std::stable_sort(rows.begin(), rows.end(), [](const PlanRow& a, const PlanRow& b) {
    return a.simulated->step_time_s < b.simulated->step_time_s;
  });
  const bool measured = std::ranges::any_of(
      rows, [](const PlanRow& row) { return row.measured_tokens_per_s.has_value(); });
  std::string out = fmt::format(
      "| # | layout | estimated step s | simulated step s | estimate error | tokens/s | {}MFU | "
      "bubble | exposed comm s | peak GiB |\n|---|---|---|---|---|---|---|---|---|---|{}\n",
      measured ? "measured tokens/s | " : "", measured ? "---|" : "");
  int rank = 0;
  for (const PlanRow& row : rows) {
    const trace::StepSummary& s = *row.simulated;
    const double estimate = row.candidate->estimate.step_s;
    std::string measured_cell;
    if (measured)
      measured_cell = row.measured_tokens_per_s
                          ? fmt::format("{:.0f} | ", *row.measured_tokens_per_s)
                          : std::string("– | ");
    out += fmt::format(
        "| {} | {} | {:.3f} | {:.3f} | {:+.1f}% | {:.0f} | {}{:.1f}% | {:.1f}% | {:.3f} | "
        "{:.1f} |\n",
        ++rank, describe_layout(row.candidate->scenario), estimate, s.step_time_s,
        (estimate / s.step_time_s - 1) * 100, s.tokens_per_s, measured_cell, s.mfu * 100,
        s.bubble_fraction * 100, mean_comm_s(s), peak_bytes(s) / kGiB);
  }
  return out;
}

std::string plan_markdown(const std::string& title, const LayoutSearch& search,
                          const std::vector<PlanRow>& simulated) {
  int dropped = 0;
  for (const auto& [reason, count] : search.dropped) dropped += count;
  std::string out = fmt::format(
      "# {}\n\n{} layouts tried, {} fit, {} dropped; the {} fastest by the closed-form estimate "
      "were simulated.\n\n",
      title, search.enumerated, search.fitting.size(), dropped, simulated.size());
  if (!search.dropped.empty()) {
    out += "| dropped for | layouts | for example |\n|---|---|---|\n";
    for (const auto& [reason, count] : search.dropped)
      out += fmt::format("| {} | {} | {} |\n", reason, count, search.example.at(reason));
    out += "\n";
  }
  return out + plan_table(simulated);
}

std::string plan_csv(const std::vector<PlanRow>& rows) {
  std::string out =
      "tp,pp,dp,micro_batch_size,microbatches,schedule,virtual_stages,zero,recompute,"
      "sequence_parallel,estimated_step_s,estimated_tokens_per_s,estimated_peak_gib,"
      "simulated_step_s,simulated_tokens_per_s,simulated_mfu,simulated_bubble,"
      "simulated_exposed_comm_s,simulated_peak_gib,measured_tokens_per_s,ep,etp,precision,cp,dp_"
      "shard\n";
  for (const PlanRow& row : rows) {
    const LayoutCandidate& c = *row.candidate;
    const LayoutSpec& l = c.scenario.layout;
    const auto& peaks = c.estimate.peak_bytes;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.4g}", l.tp, l.pp, l.dp, l.micro_batch_size,
        l.microbatches, sched::kScheduleKindNames.name(l.schedule), l.virtual_stages, l.zero,
        kRecomputeNames.name(l.recompute), l.sequence_parallel ? 1 : 0, c.estimate.step_s,
        c.tokens_per_s, *std::max_element(peaks.begin(), peaks.end()) / kGiB);
    if (const auto& s = row.simulated)
      out +=
          fmt::format(",{:.6g},{:.6g},{:.4g},{:.4g},{:.6g},{:.4g}", s->step_time_s, s->tokens_per_s,
                      s->mfu, s->bubble_fraction, mean_comm_s(*s), peak_bytes(*s) / kGiB);
    else
      out += ",,,,,,";
    out += row.measured_tokens_per_s ? fmt::format(",{:.6g}", *row.measured_tokens_per_s)
                                     : std::string(",");
    out += fmt::format(",{},{},{},{},{}\n", l.ep, l.expert_tp(),
                       kPrecisionNames.name(c.scenario.training.precision), l.cp, l.dp_shard);
  }
  return out;
}

}  // namespace dtwin
