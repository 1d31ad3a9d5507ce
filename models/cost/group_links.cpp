#include "models/cost/group_links.hpp"

#include <algorithm>

namespace dtwin {
namespace {

int gpus_per_node(const ClusterSpec& cluster) {
  return cluster.devices_per_node * cluster.ranks_per_device;
}

}  // namespace

int peers_in_node(const ClusterSpec& cluster, int n, int stride) {
  return std::min(n, std::max(1, gpus_per_node(cluster) / stride)) - 1;
}

double group_all_to_all_seconds(const ClusterSpec& cluster, int n, int stride, double bytes) {
  if (n == 1) return 0;
  const int peers = n - 1;
  const int near = peers_in_node(cluster, n, stride);
  const double intra = bytes * near / peers / cluster.intra_node.bandwidth;
  if (near == peers) return cluster.intra_node.latency + intra;
  const double inter =
      bytes * (peers - near) / peers * gpus_per_node(cluster) / cluster.inter_node.bandwidth;
  return std::max(cluster.intra_node.latency, cluster.inter_node.latency) + std::max(intra, inter);
}

LinkSpec group_ring_hop(const ClusterSpec& cluster, int n, int stride) {
  if (peers_in_node(cluster, n, stride) == n - 1) return cluster.intra_node;
  return {cluster.inter_node.bandwidth / gpus_per_node(cluster), cluster.inter_node.latency};
}

}  // namespace dtwin
