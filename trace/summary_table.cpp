#include "trace/summary_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace dtwin::trace {
namespace {

/// Row `group`'s label: its rank, or its TP group's first and last ranks.
std::string ranks_of(int group, int tp) {
  return tp == 1 ? std::to_string(group) : fmt::format("{}-{}", group * tp, group * tp + tp - 1);
}

std::string row(int width, const std::string& label, const RankSummary& r) {
  return fmt::format("{:>{}} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>6}\n", label, width,
                     r.compute_s * 1e3, r.comm_s * 1e3, r.idle_s * 1e3,
                     r.peak_memory_bytes / (1024.0 * 1024 * 1024), r.memory_ok ? "yes" : "NO");
}

}  // namespace

std::string format_summary_table(const StepSummary& summary, const std::string& title, int tp,
                                 int max_rows) {
  std::string out =
      fmt::format("{}: step {:.3f} ms, bubble {:.1f}%, {:.0f} tokens/s", title,
                  summary.step_time_s * 1e3, summary.bubble_fraction * 100, summary.tokens_per_s);
  if (summary.mfu >= 0) out += fmt::format(", MFU {:.1f}%", summary.mfu * 100);
  if (tp > 1) out += fmt::format("\none row per tensor-parallel group of {} ranks", tp);
  const int width = tp > 1 ? 11 : 6;  // "rank" holds a number, "ranks" a range such as 4-7
  out += fmt::format("\n{:>{}} {:>12} {:>12} {:>12} {:>12} {:>6}\n", tp > 1 ? "ranks" : "rank",
                     width, "compute_ms", "comm_ms", "idle_ms", "peak_GiB", "mem_ok");
  const int rows = static_cast<int>(summary.ranks.size());
  int busiest = 0;
  for (int r = 1; r < rows; ++r)
    if (summary.ranks[r].compute_s > summary.ranks[busiest].compute_s) busiest = r;
  const int half = std::max(1, max_rows / 2);
  bool skipped = false;  // rows left out since the last one shown
  for (int r = 0; r < rows; ++r) {
    if (rows <= max_rows || r < half || r >= rows - half || r == busiest) {
      if (skipped) out += fmt::format("{:>{}}\n", "...", width);
      skipped = false;
      out += row(width, ranks_of(r, tp), summary.ranks[r]);
    } else {
      skipped = true;
    }
  }
  return out;
}

}  // namespace dtwin::trace
