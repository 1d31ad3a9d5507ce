#include "sim/replica_fold.hpp"

namespace dtwin::sim {

int simulated_replicas(const Scenario& scenario, const sched::Layout& layout,
                       CollectiveModel collectives, int steps, bool profiled) {
  const ClusterSpec& cluster = scenario.cluster;
  const int slots = cluster.devices_per_node * cluster.ranks_per_device;
  if (slots % layout.tp != 0) return layout.dp;
  const int per_node = slots / layout.tp;
  const bool symmetric = steps == 1 && !profiled && collectives == CollectiveModel::Flow &&
                         cluster.topology == Topology::Star &&
                         layout.dp_sync != sched::DpSync::GatherScatter && !layout.hybrid_shard();
  if (!symmetric || layout.dp % per_node != 0 || layout.dp <= 2 * per_node) return layout.dp;
  return 2 * per_node;
}

void unfold_summary(trace::StepSummary& summary, const sched::Layout& layout, int replicas) {
  if (replicas >= layout.dp || summary.step_time_s <= 0) return;
  double idle_fraction = 0;
  for (int rank = 0; rank < layout.group_count(); ++rank) {
    trace::RankSummary& figures = summary.ranks.at(rank);
    const int d = layout.dp_index(rank);
    if (d >= replicas) {
      const trace::RankSummary& from =
          summary.ranks.at(layout.group(d % replicas, layout.pipeline_rank(rank)));
      figures.compute_s = from.compute_s;
      figures.comm_s = from.comm_s;
      figures.idle_s = from.idle_s;
    }
    idle_fraction += figures.idle_s / summary.step_time_s;
  }
  summary.bubble_fraction = idle_fraction / layout.group_count();
}

}  // namespace dtwin::sim
