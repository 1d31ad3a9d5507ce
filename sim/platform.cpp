#include "sim/platform.hpp"

#include <algorithm>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <string>

#include "models/cost/rank_sharing.hpp"

namespace sg4 = simgrid::s4u;

namespace dtwin::sim {
namespace {

sg4::Link* duplex(sg4::NetZone* zone, const std::string& name, const LinkSpec& spec) {
  return zone->create_split_duplex_link(name, spec.bandwidth)
      ->set_latency(spec.latency / 2)
      ->seal();
}

struct Node {
  sg4::NetZone* zone;
  simgrid::kernel::routing::NetPoint* gateway;
};

// The capacity of a device while n executions of `threads` threads each run on it, so that each
// thread computes at speed / slowdown (SimGrid's non-linear sharing: the callback returns the
// capacity that max-min then shares among the n). Each execution is a schedule rank whose
// `members` tensor-parallel processes share the device and compute together, and the profile
// timed a rank's passes with `baseline` processes (sharing_baseline: its members, or every
// member of a profile that outnumbered the cores) computing: slowdown =
// concurrency(max(n·members, baseline)) / concurrency(baseline).
sg4::NonLinearResourceCb measured_sharing(const Profile& profile, int threads, int members,
                                          int baseline, double speed) {
  return [profile, threads, members, baseline, speed](double /*capacity*/, int n) {
    const double slowdown =
        profile.concurrency_slowdown(std::max(std::max(n, 1) * members, baseline)) /
        profile.concurrency_slowdown(baseline);
    return n * threads * speed / slowdown;
  };
}

// The processes whose sharing of a host's cores the profile's figures carry (Platform::
// sharing_baseline).
int sharing_baseline(const Scenario& scenario, const Profile* profile) {
  const int members = members_per_device(scenario);
  if (!profile) return members;
  return std::max(members,
                  std::min(profile->processes_sharing_cores, scenario.cluster.ranks_per_device));
}

// The capacity of a device's loopback (the ranks that share it sending to each other) while n
// transfers cross it, so that each gets capacity / slowdown: the profile's p2p_concurrency.
sg4::NonLinearResourceCb measured_loopback(const Profile& profile) {
  return [profile](double capacity, int n) {
    return std::max(n, 1) * capacity / profile.p2p_concurrency_slowdown(std::max(n, 1));
  };
}

// Whether each device (node · devices_per_node + index) holds a simulated schedule rank
// (`simulated`, empty: all): with tp > 1 only the device of a tensor-parallel group's first
// member does (its group's one actor runs there).
std::vector<bool> devices_with_ranks(const Scenario& scenario, const std::vector<bool>& simulated) {
  const ClusterSpec& cluster = scenario.cluster;
  std::vector<bool> used(static_cast<size_t>(cluster.nodes) * cluster.devices_per_node, false);
  const int tp = scenario.layout.tp;
  for (int rank = 0; rank < scenario.world_size() / tp; ++rank)
    if (simulated.empty() || simulated.at(rank))
      used.at(rank * tp / cluster.ranks_per_device) = true;
  return used;
}

// One node: a star of its devices behind a router, the node's gateway to the network. Only the
// devices in `used` are created (platform.devices holds nullptr for the others): a device no
// rank runs on carries no execution and no transfer, so leaving it out changes no prediction,
// and SimGrid 3.32 checks each new host's and link's name against every zone, which made the
// platform of 16384 GPUs take most of a simulation.
Node build_node(sg4::NetZone* parent, int node, const Scenario& scenario, const Profile* profile,
                const std::vector<bool>& used, Platform& platform) {
  const ClusterSpec& cluster = scenario.cluster;
  auto* zone = sg4::create_star_zone("node" + std::to_string(node));
  zone->set_parent(parent);
  const double speed = cluster.device.peak_flops * cluster.device.efficiency / cluster.device.cores;
  for (int d = 0; d < cluster.devices_per_node; ++d) {
    if (!used.at(static_cast<size_t>(node) * cluster.devices_per_node + d)) {
      platform.devices.push_back(nullptr);
      continue;
    }
    const std::string name = "node" + std::to_string(node) + "-dev" + std::to_string(d);
    sg4::Host* host = zone->create_host(name, speed)->set_core_count(cluster.device.cores);
    if (profile && !profile->concurrency.empty())
      host->set_sharing_policy(
          sg4::Host::SharingPolicy::NONLINEAR,
          measured_sharing(*profile, threads_per_rank(scenario), members_per_device(scenario),
                           sharing_baseline(scenario, profile), speed));
    host->seal();
    sg4::Link* link = duplex(zone, name + "-link", cluster.intra_node);
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {{link, sg4::LinkInRoute::Direction::UP}}, true);
    // Without a measured curve one transfer at a time gets the whole bandwidth (SHARED).
    sg4::Link* loopback = zone->create_link(name + "-loopback", cluster.intra_node.bandwidth)
                              ->set_latency(cluster.intra_node.latency);
    if (profile && !profile->p2p_concurrency.empty())
      loopback->set_sharing_policy(sg4::Link::SharingPolicy::NONLINEAR,
                                   measured_loopback(*profile));
    loopback->seal();
    zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(loopback)}, false);
    platform.devices.push_back(host);
  }
  auto* router = zone->create_router("node" + std::to_string(node) + "-switch");
  zone->seal();
  return {zone, router};
}

void build_star(const Scenario& scenario, const Profile* profile, const std::vector<bool>& used,
                Platform& platform) {
  auto* root = sg4::create_star_zone("cluster");
  for (int node = 0; node < scenario.cluster.nodes; ++node) {
    const Node built = build_node(root, node, scenario, profile, used, platform);
    sg4::Link* nic =
        duplex(root, "node" + std::to_string(node) + "-nic", scenario.cluster.inter_node);
    root->add_route(built.zone->get_netpoint(), nullptr, built.gateway, nullptr,
                    {{nic, sg4::LinkInRoute::Direction::UP}}, true);
  }
  root->seal();
}

// Two-level fat-tree (SimGrid's FatTreeZone): leaf switches of nodes_per_switch nodes and as
// many spine switches, every link at the inter-node bandwidth and half its latency, so a
// message between nodes of one leaf sees the inter-node latency and one across the spine twice.
void build_fat_tree(const Scenario& scenario, const Profile* profile, const std::vector<bool>& used,
                    Platform& platform) {
  const ClusterSpec& cluster = scenario.cluster;
  const unsigned per_switch = cluster.nodes_per_switch;
  const unsigned leaves = cluster.nodes / cluster.nodes_per_switch;
  const sg4::FatTreeParams shape(2, {per_switch, leaves}, {1, per_switch}, {1, 1});
  int next_node = 0;
  const sg4::ClusterCallbacks callbacks(
      [&](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long) {
        const Node node = build_node(zone, next_node++, scenario, profile, used, platform);
        return std::make_pair(node.zone->get_netpoint(), node.gateway);
      });
  sg4::create_fatTree_zone("cluster", nullptr, shape, callbacks, cluster.inter_node.bandwidth,
                           cluster.inter_node.latency / 2, sg4::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
}

}  // namespace

void configure_network_model() {
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
}

std::unique_ptr<sg4::Engine> make_engine() {
  int argc = 2;
  char name[] = "dtwin", log[] = "--log=root.thres:critical";
  char* argv[] = {name, log, nullptr};
  auto engine = std::make_unique<sg4::Engine>(&argc, argv);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // ASan and TSan cannot follow the stack switches of SimGrid's default contexts (Debian's
  // SimGrid is not built for them); in those builds actors run as threads, slower and with the
  // same result.
  sg4::Engine::set_config("contexts/factory:thread");
#endif
  // No guard page below each actor's stack (8 MiB, far deeper than any actor's calls): mprotect
  // splits a stack's mapping in two, and Llama 3.1 8B on 128 GPUs, its gradient-bucket actors
  // alive at once, then exceeded Linux's default 65,530 mappings per process and aborted.
  sg4::Engine::set_config("contexts/guard-size:0");
  configure_network_model();
  return engine;
}

Platform build_platform(const Scenario& scenario, const Profile* profile,
                        const std::vector<bool>& simulated) {
  Platform platform;
  const std::vector<bool> used = devices_with_ranks(scenario, simulated);
  if (scenario.cluster.topology == Topology::FatTree)
    build_fat_tree(scenario, profile, used, platform);
  else
    build_star(scenario, profile, used, platform);
  const ClusterSpec& cluster = scenario.cluster;
  const int tp = scenario.layout.tp;
  platform.members_per_host = members_per_device(scenario);
  platform.sharing_baseline = sharing_baseline(scenario, profile);
  platform.group_members = tp;
  platform.threads_per_rank = threads_per_rank(scenario);
  if (profile) {
    platform.collective_cpu_s_per_byte = profile->allreduce_overhead_s_per_byte();
    platform.gather_cpu_s_per_byte = profile->half_ring_overhead_s_per_byte(profile->allgather);
    platform.reduce_scatter_cpu_s_per_byte =
        profile->half_ring_overhead_s_per_byte(profile->reduce_scatter);
  }
  for (int rank = 0; rank < scenario.world_size() / tp; ++rank) {
    const int device = rank * tp / cluster.ranks_per_device;
    platform.rank_hosts.push_back(platform.devices.at(device));
    platform.rank_nodes.push_back(device / cluster.devices_per_node);
  }
  return platform;
}

}  // namespace dtwin::sim
