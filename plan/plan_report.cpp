#include "plan/plan_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "models/cost/memory_budget.hpp"
#include "plan/alike_layouts.hpp"

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

// 1204 as "1,204".
std::string with_commas(size_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// 1 as "1st", 12 as "12th", 22 as "22nd", 18782 as "18,782nd".
std::string ordinal(size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return with_commas(n) + suffix;
}

// "A s vs the best B s, +C%" ("the best simulated" with `which` "simulated").
std::string against_best(double seconds, double best, const std::string& which = "") {
  return fmt::format("{:.3f} s vs the best {}{:.3f} s, {:+.1f}%", seconds,
                     which.empty() ? "" : which + " ", best, (seconds / best - 1) * 100);
}

// The layout cell of a simulated row: the layout, "(your layout)" for the scenario's own, and the
// rows of its group that were not simulated as "+ N alike (differing in ...)".
std::string layout_cell(const PlanRow& row, const std::vector<PlanRow>& rows) {
  std::string cell = describe_layout(row.candidate->scenario);
  if (row.input) cell += " (your layout)";
  std::vector<const LayoutCandidate*> alike;
  for (const PlanRow& other : rows)
    if (other.group == row.group && !other.simulated) alike.push_back(other.candidate);
  if (!alike.empty())
    cell += fmt::format(" + {} alike (differing in {})", alike.size(),
                        alike_settings(*row.candidate, alike));
  return cell;
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

std::string plan_table(const std::vector<PlanRow>& rows) {
  std::vector<const PlanRow*> simulated;
  for (const PlanRow& row : rows)
    if (row.simulated) simulated.push_back(&row);
  std::ranges::stable_sort(simulated, {},
                           [](const PlanRow* row) { return row->simulated->step_time_s; });
  const bool measured = std::ranges::any_of(
      simulated, [](const PlanRow* row) { return row->measured_tokens_per_s.has_value(); });
  std::string out = fmt::format(
      "| # | layout | estimated step s | simulated step s | estimate error | tokens/s | {}MFU | "
      "bubble | exposed comm s | peak GiB |\n|---|---|---|---|---|---|---|---|---|---|{}\n",
      measured ? "measured tokens/s | " : "", measured ? "---|" : "");
  int rank = 0;
  for (const PlanRow* row : simulated) {
    const trace::StepSummary& s = *row->simulated;
    const double estimate = row->candidate->estimate.step_s;
    std::string measured_cell;
    if (measured)
      measured_cell = row->measured_tokens_per_s
                          ? fmt::format("{:.0f} | ", *row->measured_tokens_per_s)
                          : std::string("– | ");
    out += fmt::format(
        "| {} | {} | {:.3f} | {:.3f} | {:+.1f}% | {:.0f} | {}{:.1f}% | {:.1f}% | {:.3f} | "
        "{:.1f} |\n",
        ++rank, layout_cell(*row, rows), estimate, s.step_time_s,
        (estimate / s.step_time_s - 1) * 100, s.tokens_per_s, measured_cell, s.mfu * 100,
        s.bubble_fraction * 100, mean_comm_s(s), peak_bytes(s) / kGiB);
  }
  return out;
}

std::string input_line(const Scenario& base, const LayoutSearch& search,
                       const std::vector<PlanRow>& rows) {
  const InputLayout& input = search.input;
  std::string out = "your layout (" + describe_layout(base) + ") ";
  if (!input.candidate) return out + input.why + "\n";
  const double step = input.candidate->estimate.step_s;
  const double best = search.fitting.front().estimate.step_s;
  const std::string ranked = fmt::format(
      "rank{} {} of {} by estimated step time: {}", input.searched ? "s" : "", ordinal(input.rank),
      with_commas(search.fitting.size()), against_best(step, best));
  if (input.searched)
    out += ranked;
  else if (input.rank > 0)
    out += input.why + "; it would " + ranked;
  else
    out += input.why + "; estimated " + against_best(step, best);
  const auto own = std::ranges::find_if(rows, [](const PlanRow& row) { return row.input; });
  double best_simulated = 0;
  for (const PlanRow& row : rows)
    if (row.simulated && row.group > 0 &&
        (best_simulated == 0 || row.simulated->step_time_s < best_simulated))
      best_simulated = row.simulated->step_time_s;
  if (own != rows.end() && own->simulated)
    out += "; simulated " + against_best(own->simulated->step_time_s, best_simulated, "simulated");
  return out + "\n";
}

std::string plan_markdown(const std::string& title, const Scenario& base,
                          const LayoutSearch& search, const std::vector<PlanRow>& rows) {
  int dropped = 0;
  for (const auto& [reason, count] : search.dropped) dropped += count;
  const auto simulated = std::ranges::count_if(
      rows, [](const PlanRow& row) { return row.simulated.has_value() && !row.input; });
  std::string out = fmt::format(
      "# {}\n\n{} layouts tried, {} fit, {} dropped; the {} fastest distinct ones by the "
      "closed-form estimate were simulated.\n\n",
      title, search.enumerated, search.fitting.size(), dropped, simulated);
  if (!search.dropped.empty()) {
    out += "| dropped for | layouts | for example |\n|---|---|---|\n";
    for (const auto& [reason, count] : search.dropped)
      out += fmt::format("| {} | {} | {} |\n", reason, count, search.example.at(reason));
    out += "\n";
  }
  return out + input_line(base, search, rows) + "\n" + plan_table(rows);
}

std::string plan_csv(const std::vector<PlanRow>& rows) {
  std::string out =
      "tp,pp,dp,micro_batch_size,microbatches,schedule,virtual_stages,zero,recompute,"
      "sequence_parallel,estimated_step_s,estimated_tokens_per_s,estimated_peak_gib,"
      "simulated_step_s,simulated_tokens_per_s,simulated_mfu,simulated_bubble,"
      "simulated_exposed_comm_s,simulated_peak_gib,measured_tokens_per_s,ep,etp,precision,cp,"
      "dp_shard,is_input,group,memory_limit_gib\n";
  for (const PlanRow& row : rows) {
    const LayoutCandidate& c = *row.candidate;
    const LayoutSpec& l = c.scenario.layout;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.4g}", l.tp, l.pp, l.dp, l.micro_batch_size,
        l.microbatches, sched::kScheduleKindNames.name(l.schedule), l.virtual_stages, l.zero,
        kRecomputeNames.name(l.recompute), l.sequence_parallel ? 1 : 0, c.estimate.step_s,
        c.tokens_per_s, std::ranges::max(c.estimate.peak_bytes) / kGiB);
    if (const auto& s = row.simulated)
      out +=
          fmt::format(",{:.6g},{:.6g},{:.4g},{:.4g},{:.6g},{:.4g}", s->step_time_s, s->tokens_per_s,
                      s->mfu, s->bubble_fraction, mean_comm_s(*s), peak_bytes(*s) / kGiB);
    else
      out += ",,,,,,";
    out += row.measured_tokens_per_s ? fmt::format(",{:.6g}", *row.measured_tokens_per_s)
                                     : std::string(",");
    out += fmt::format(",{},{},{},{},{},{},{},{:.4g}\n", l.ep, l.expert_tp(),
                       kPrecisionNames.name(c.scenario.training.precision), l.cp, l.dp_shard,
                       row.input ? 1 : 0, row.group,
                       tensor_memory_per_rank(c.scenario.cluster) / kGiB);
  }
  return out;
}

}  // namespace dtwin
