#include "schedules/generators.hpp"

namespace dtwin::sched {

std::vector<ActionList> gpipe(const Layout& layout) {
  std::vector<ActionList> pipeline(layout.pp);
  for (int rank = 0; rank < layout.pp; ++rank) {
    for (int mb = 0; mb < layout.microbatches; ++mb)
      pipeline[rank].push_back({rank, ActionKind::F, mb});
    for (int mb = 0; mb < layout.microbatches; ++mb)
      pipeline[rank].push_back({rank, ActionKind::B, mb});
  }
  return pipeline;
}

}  // namespace dtwin::sched
