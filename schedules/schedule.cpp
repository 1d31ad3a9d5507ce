#include "schedules/schedule.hpp"

#include <array>
#include <utility>

namespace dtwin::sched {
namespace {

constexpr std::array<std::pair<std::string_view, DpSync>, 3> kDpSyncNames{{
    {"allreduce", DpSync::AllReduce},
    {"gather-scatter", DpSync::GatherScatter},
    {"weight-average", DpSync::WeightAverage},
}};

}  // namespace

std::string_view dp_sync_name(DpSync sync) {
  for (const auto& [name, s] : kDpSyncNames)
    if (s == sync) return name;
  return "?";
}

std::optional<DpSync> parse_dp_sync(std::string_view name) {
  for (const auto& [n, s] : kDpSyncNames)
    if (n == name) return s;
  return std::nullopt;
}

Schedule replicate_pipeline(std::string name, const Layout& layout,
                            const std::vector<ActionList>& pipeline) {
  Schedule schedule{std::move(name), layout, std::vector<ActionList>(layout.world_size())};
  for (int rank = 0; rank < layout.world_size(); ++rank)
    schedule.ranks[rank] = pipeline.at(layout.pipeline_rank(rank));
  return schedule;
}

}  // namespace dtwin::sched
