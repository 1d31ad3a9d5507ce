#include "models/spec/size_guard.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace dtwin {
namespace {

constexpr double kActionsPerMicrobatchChunk = 6;  // F, B or I + W, up to 4 sends and receives
constexpr double kActionsPerRank = 16;            // synchronisation and optimizer step

}  // namespace

double estimated_actions(const LayoutSpec& layout) {
  const double per_rank = static_cast<double>(layout.microbatches) * layout.virtual_stages *
                              kActionsPerMicrobatchChunk +
                          kActionsPerRank;
  return per_rank * layout.dp * layout.pp;
}

std::optional<Violation> size_violation(const Scenario& scenario, double budget_bytes) {
  const LayoutSpec& l = scenario.layout;
  const double bytes = estimated_actions(l) * kBytesPerAction;
  if (bytes <= budget_bytes) return std::nullopt;
  const double ranks = static_cast<double>(l.dp) * l.pp;
  const double fitting = std::floor((budget_bytes / kBytesPerAction / ranks - kActionsPerRank) /
                                    (kActionsPerMicrobatchChunk * l.virtual_stages));
  return Violation{
      {"layout.microbatches"},
      fmt::format(
          "a schedule this machine can simulate: {} microbatches on {} ranks lower to about "
          "{:.3g} actions, {:.3g} GB to simulate at {} bytes each, over the budget of "
          "{:.3g} GB (by default 80% of this machine's memory); at most {} microbatches fit",
          l.microbatches, static_cast<long long>(ranks), estimated_actions(l), bytes / 1e9,
          kBytesPerAction, budget_bytes / 1e9, static_cast<long long>(std::max(0.0, fitting)))};
}

double machine_memory_budget() {
  const double pages = static_cast<double>(sysconf(_SC_PHYS_PAGES));
  const double page = static_cast<double>(sysconf(_SC_PAGE_SIZE));
  return 0.8 * pages * page;
}

}  // namespace dtwin
