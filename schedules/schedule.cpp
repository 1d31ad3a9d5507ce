#include "schedules/schedule.hpp"

#include <string>
#include <utility>

namespace dtwin::sched {

Schedule replicate_pipeline(std::string name, const Layout& layout,
                            const std::vector<ActionList>& pipeline) {
  Schedule schedule{std::move(name), layout, std::vector<ActionList>(layout.group_count())};
  for (int rank = 0; rank < layout.group_count(); ++rank)
    schedule.ranks[rank] = pipeline.at(layout.pipeline_rank(rank));
  return schedule;
}

std::string shard_error(const Layout& layout) {
  const std::string shard = "layout.dp_shard " + std::to_string(layout.dp_shard);
  if (layout.dp_shard < 0) return shard + ": expected 0 (all of dp) or a divisor of dp";
  if (layout.dp_shard > 0 && layout.dp % layout.dp_shard != 0)
    return shard + ": expected a divisor of dp " + std::to_string(layout.dp);
  if (layout.hybrid_shard() && layout.zero == 0)
    return shard + " shards ZeRO's states: needs layout.zero > 0";
  return "";
}

}  // namespace dtwin::sched
