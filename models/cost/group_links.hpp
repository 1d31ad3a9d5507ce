// The links a communication group crosses when its members sit `stride` GPUs apart in
// Megatron-Core's rank order: an expert-parallel group (stride etp), a context-parallel group
// (stride tp). A group of n members spans n·stride consecutive GPUs, G = devices_per_node ·
// ranks_per_device to a node (every GPU of a node has its share, β_inter / G, of the node's
// inter-node link: the node's GPUs exchange at once).
#pragma once

#include "models/spec/scenario.hpp"

namespace dtwin {

/// Of a member's n − 1 peers, those on its node: min(n, max(1, G / stride)) − 1.
int peers_in_node(const ClusterSpec& cluster, int n, int stride);

/// Seconds of an all-to-all in which each of n members sends `bytes` spread evenly over its
/// n − 1 peers, with p = peers_in_node of them on its node: α + max(bytes·p/(n−1) / β_intra,
/// bytes·(n−1−p)/(n−1) · G / β_inter), α the latency of the slowest link used. 0 when n = 1.
double group_all_to_all_seconds(const ClusterSpec& cluster, int n, int stride, double bytes);

/// The slowest hop of a ring over the group: the intra-node link when the whole group shares a
/// node, else a GPU's share of the inter-node link, {β_inter / G, α_inter} (the ring's hops
/// between nodes run at once for all the node's GPUs).
LinkSpec group_ring_hop(const ClusterSpec& cluster, int n, int stride);

}  // namespace dtwin
