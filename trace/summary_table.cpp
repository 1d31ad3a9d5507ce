#include "trace/summary_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace dtwin::trace {
namespace {

std::string row(int rank, const RankSummary& r) {
  return fmt::format("{:>6} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>6}\n", rank,
                     r.compute_s * 1e3, r.comm_s * 1e3, r.idle_s * 1e3,
                     r.peak_memory_bytes / (1024.0 * 1024 * 1024), r.memory_ok ? "yes" : "NO");
}

}  // namespace

std::string format_summary_table(const StepSummary& summary, const std::string& title,
                                 int max_rows) {
  std::string out =
      fmt::format("{}: step {:.3f} ms, bubble {:.1f}%, {:.0f} tokens/s", title,
                  summary.step_time_s * 1e3, summary.bubble_fraction * 100, summary.tokens_per_s);
  if (summary.mfu >= 0) out += fmt::format(", MFU {:.1f}%", summary.mfu * 100);
  out += fmt::format("\n{:>6} {:>12} {:>12} {:>12} {:>12} {:>6}\n", "rank", "compute_ms", "comm_ms",
                     "idle_ms", "peak_GiB", "mem_ok");
  const int world = static_cast<int>(summary.ranks.size());
  int busiest = 0;
  for (int r = 1; r < world; ++r)
    if (summary.ranks[r].compute_s > summary.ranks[busiest].compute_s) busiest = r;
  const int half = std::max(1, max_rows / 2);
  for (int r = 0; r < world; ++r) {
    const bool shown = world <= max_rows || r < half || r >= world - half || r == busiest;
    if (shown)
      out += row(r, summary.ranks[r]);
    else if (r == half)
      out += "   ...\n";
  }
  return out;
}

}  // namespace dtwin::trace
