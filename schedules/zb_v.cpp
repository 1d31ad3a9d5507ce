#include <algorithm>

#include "schedules/chunk_counter.hpp"
#include "schedules/generators.hpp"

namespace dtwin::sched {

// The phases of PyTorch's ScheduleZBVZeroBubble (torch/distributed/pipelining/schedules.py).
std::vector<ActionList> zb_v(const Layout& layout) {
  using enum ActionKind;
  const int pp = layout.pp, rounds = std::max(2 * pp - 1, layout.microbatches);
  std::vector<ActionList> pipeline(pp);
  for (int r = 0; r < pp; ++r) {
    ChunkCounter c(layout, r, pipeline[r]);
    // Warm-up: chunk 0 fills the way to the turn, chunk 1 (r stages from the loss) follows.
    c.repeat(2 * (pp - r) - 1, {{0, F}});
    c.repeat(r, {{1, F}, {0, F}});
    c.repeat(pp - r, {{1, F}, {1, I}, {1, W}});
    // Steady state: one microbatch of each chunk forward, input and weight gradient.
    while (c.count(1, F) < c.count(0, F) || c.count(0, F) < rounds) {
      if (c.count(0, F) < rounds) c.emit(0, F);
      c.repeat(1, {{0, I}, {0, W}, {1, F}, {1, I}, {1, W}});
    }
    // Cool-down: the input gradients first, the weight gradients deferred into the bubble.
    c.repeat(r, {{0, I}, {1, I}});
    c.repeat(pp - r, {{0, I}, {0, W}});
    for (int chunk : {1, 0})
      while (c.count(chunk, W) < c.count(chunk, I)) c.emit(chunk, W);
  }
  return pipeline;
}

}  // namespace dtwin::sched
