#include "schedules/schedule.hpp"

#include <utility>

namespace dtwin::sched {

Schedule replicate_pipeline(std::string name, const Layout& layout,
                            const std::vector<ActionList>& pipeline) {
  Schedule schedule{std::move(name), layout, std::vector<ActionList>(layout.group_count())};
  for (int rank = 0; rank < layout.group_count(); ++rank)
    schedule.ranks[rank] = pipeline.at(layout.pipeline_rank(rank));
  return schedule;
}

}  // namespace dtwin::sched
