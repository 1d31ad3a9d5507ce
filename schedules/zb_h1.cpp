#include "schedules/generators.hpp"

namespace dtwin::sched {

// ZB-H1 is 1F1B with each backward B split: the input part I stays where B was, and the weight
// part W follows it, except that pipeline rank r holds its first r W passes back until after its
// last I, where they fill the cool-down bubble.
std::vector<ActionList> zb_h1(const Layout& layout) {
  std::vector<ActionList> pipeline = one_f_one_b(layout);
  for (int rank = 0; rank < layout.pp; ++rank) {
    ActionList split;
    int next_w = 0;
    for (const Action& a : pipeline[rank]) {
      if (a.kind != ActionKind::B) {
        split.push_back(a);
        continue;
      }
      split.push_back({rank, ActionKind::I, a.microbatch});
      if (a.microbatch >= rank) split.push_back({rank, ActionKind::W, next_w++});
    }
    while (next_w < layout.microbatches) split.push_back({rank, ActionKind::W, next_w++});
    pipeline[rank] = std::move(split);
  }
  return pipeline;
}

}  // namespace dtwin::sched
