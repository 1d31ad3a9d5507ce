#include <algorithm>

#include "schedules/generators.hpp"

namespace dtwin::sched {
namespace {

// Megatron-LM's mapping of virtual step k to a model chunk and a microbatch: steps come in
// groups of pp*v; inside a group, pp consecutive steps share a chunk. Backward walks the chunks
// in reverse order.
struct VirtualStep {
  int chunk;
  int microbatch;
};

VirtualStep virtual_step(const Layout& layout, int k, bool backward) {
  const int group = layout.pp * layout.virtual_stages;
  int chunk = (k % group) / layout.pp;
  if (backward) chunk = layout.virtual_stages - 1 - chunk;
  return {chunk, (k / group) * layout.pp + k % layout.pp};
}

Action chunk_action(const Layout& layout, int rank, int k, ActionKind kind) {
  VirtualStep step = virtual_step(layout, k, kind != ActionKind::F);
  return {step.chunk * layout.pp + rank, kind, step.microbatch};
}

}  // namespace

std::vector<ActionList> interleaved_1f1b(const Layout& layout) {
  const int total = layout.microbatches * layout.virtual_stages;
  std::vector<ActionList> pipeline(layout.pp);
  for (int rank = 0; rank < layout.pp; ++rank) {
    ActionList& actions = pipeline[rank];
    const int warmup =
        std::min((layout.pp - rank - 1) * 2 + (layout.virtual_stages - 1) * layout.pp, total);
    for (int k = 0; k < warmup; ++k)
      actions.push_back(chunk_action(layout, rank, k, ActionKind::F));
    for (int k = 0; k < total - warmup; ++k) {
      actions.push_back(chunk_action(layout, rank, warmup + k, ActionKind::F));
      actions.push_back(chunk_action(layout, rank, k, ActionKind::B));
    }
    for (int k = total - warmup; k < total; ++k)
      actions.push_back(chunk_action(layout, rank, k, ActionKind::B));
  }
  return pipeline;
}

}  // namespace dtwin::sched
