#include <algorithm>

#include "schedules/generators.hpp"

namespace dtwin::sched {

std::vector<ActionList> one_f_one_b(const Layout& layout) {
  const int m = layout.microbatches;
  std::vector<ActionList> pipeline(layout.pp);
  for (int rank = 0; rank < layout.pp; ++rank) {
    ActionList& actions = pipeline[rank];
    const int warmup = std::min(layout.pp - rank - 1, m);
    for (int mb = 0; mb < warmup; ++mb) actions.push_back({rank, ActionKind::F, mb});
    for (int mb = 0; mb < m - warmup; ++mb) {
      actions.push_back({rank, ActionKind::F, warmup + mb});
      actions.push_back({rank, ActionKind::B, mb});
    }
    for (int mb = m - warmup; mb < m; ++mb) actions.push_back({rank, ActionKind::B, mb});
  }
  return pipeline;
}

}  // namespace dtwin::sched
