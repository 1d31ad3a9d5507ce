#include "models/cost/nccl_model.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <string>

namespace dtwin {
namespace {

// NCCL 2.20.3-1, src/graph/tuning.cc. Latencies in microseconds, indexed [algorithm][protocol]
// with algorithm {ring, tree} and protocol {LL, LL128, Simple} (NcclAlgorithm, NcclProtocol).
using Table = std::array<std::array<double, 3>, 2>;
// baseLat: the fixed cost of a collective (kernel start, synchronisation).
constexpr Table kBaseLatencyUs = {{{6.6, 14.0, 8.4}, {6.8, 14.0, 0.0}}};
// hwLat[NVLink]: each step (ring) or tree level within a node.
constexpr Table kNvlinkHopUs = {{{0.6, 1.9, 3.4}, {0.6, 1.25, 28.0}}};
// hwLat[NET]: each step or tree level between nodes.
constexpr Table kNetworkHopUs = {{{2.7, 4.0, 14.0}, {5.0, 8.5, 28.0}}};
// getNetOverhead: a network post's CPU overhead on an x86 Intel host (2 µs on AMD), three times
// over for Simple; a ring step within a node costs at least that once the ring crosses nodes.
constexpr double kNetOverheadUs = 1.0;
constexpr double kSimpleNetOverheadFactor = 3;
// "Plateau effect of ring": Simple ring all-reduce latency across nodes, compute capability >= 8.
constexpr double kRingPlateau = 1.4;
// llMaxBws (GB/s), Ampere/Hopper on one node, Intel-host rows on 2 and more nodes.
constexpr double kLlMaxBusBandwidth[3] = {87.7e9, 39.0e9, 20.4e9};
// Protocol efficiencies of the bus bandwidth.
constexpr double kRingLlAllReduce = 1.0 / 4, kRingLlOther = 1.0 / 3;
constexpr double kRingLl128 = 0.92, kRingLl128OneGpuPerNode = 0.7;
constexpr double kTree = 0.92, kTreeLl = 1.0 / 3.8, kTreeLl128OneNode = 7.0 / 9,
                 kTreeLl128 = 120.0 / 128;
// A tree all-reduce moves the buffer up and down the tree: half the bus bandwidth.
constexpr double kTreeAlgorithmRatio = 0.5;
// treeCorrectionFactor: the tree's bandwidth at 64 B · 2^i (i = ⌊log2(bytes / 64)⌋ < 23).
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

constexpr double kMicro = 1e-6;

// ⌊log2 x⌋ for x >= 1, 0 below.
int floor_log2(double x) {
  int l = 0;
  while (x >= 2) {
    x /= 2;
    ++l;
  }
  return l;
}

double latency_us(NcclCollective collective, int a, int p, const NcclGroup& g) {
  const bool all_reduce = collective == NcclCollective::AllReduce;
  const bool simple = p == static_cast<int>(NcclProtocol::Simple);
  if (a == static_cast<int>(NcclAlgorithm::Tree))
    return kBaseLatencyUs[a][p] + 2 * ((g.ranks / g.nodes - 1) * kNvlinkHopUs[a][p] +
                                       floor_log2(g.nodes) * kNetworkHopUs[a][p]);
  const int steps = all_reduce ? 2 * (g.ranks - 1) : g.ranks - 1;
  // NCCL counts 2N network steps for an all-reduce across N nodes, N - 1 for the others; a ring
  // of one GPU per node has no more steps than that.
  const int inter = std::min(steps, all_reduce ? (g.nodes > 1 ? 2 * g.nodes : 0) : g.nodes - 1);
  const double overhead =
      g.nodes > 1 ? kNetOverheadUs * (simple ? kSimpleNetOverheadFactor : 1) : 0;
  const double latency = kBaseLatencyUs[a][p] +
                         (steps - inter) * std::max(kNvlinkHopUs[a][p], overhead) +
                         inter * kNetworkHopUs[a][p];
  return simple && all_reduce && g.nodes > 1 ? latency * kRingPlateau : latency;
}

// Bytes/s the algorithm moves the buffer at (NCCL's algorithm bandwidth).
double algorithm_bandwidth(NcclCollective collective, NcclAlgorithm algorithm,
                           NcclProtocol protocol, double bytes, const NcclGroup& g, double beta) {
  const bool all_reduce = collective == NcclCollective::AllReduce;
  const double ll_max = kLlMaxBusBandwidth[std::min(g.nodes, 3) - 1];
  double bus = beta;
  if (algorithm == NcclAlgorithm::Ring) {
    if (protocol == NcclProtocol::LL)
      bus = std::min(ll_max, beta * (g.nodes > 1 || all_reduce ? kRingLlAllReduce : kRingLlOther));
    if (protocol == NcclProtocol::LL128)
      bus = beta * (double(g.ranks) / g.nodes < 2 ? kRingLl128OneGpuPerNode : kRingLl128);
    const int steps = all_reduce ? 2 * (g.ranks - 1) : g.ranks - 1;
    return bus * g.ranks / steps;
  }
  bus = beta * kTree;
  if (protocol == NcclProtocol::LL) bus = std::min(bus * kTreeLl, ll_max);
  if (protocol == NcclProtocol::LL128) bus *= g.nodes == 1 ? kTreeLl128OneNode : kTreeLl128;
  const int size_index = floor_log2(bytes / 64);
  const double correction =
      size_index < 23 ? kTreeCorrection[static_cast<int>(protocol)][size_index] : 1.0;
  return bus * kTreeAlgorithmRatio * correction;
}

}  // namespace

NcclTime nccl_time(NcclCollective collective, NcclAlgorithm algorithm, NcclProtocol protocol,
                   double bytes, const NcclGroup& group, double bus_bandwidth) {
  if (group.ranks < 1 || group.nodes < 1 || group.nodes > group.ranks)
    throw std::invalid_argument("nccl_time: a group of " + std::to_string(group.ranks) +
                                " ranks on " + std::to_string(group.nodes) + " nodes");
  if (algorithm == NcclAlgorithm::Tree && collective != NcclCollective::AllReduce)
    throw std::invalid_argument("nccl_time: NCCL runs only all-reduces as trees");
  NcclTime t{algorithm, protocol, 0, 0};
  if (group.ranks == 1) return t;
  t.latency_s = kMicro * latency_us(collective, static_cast<int>(algorithm),
                                    static_cast<int>(protocol), group);
  t.seconds = t.latency_s + bytes / algorithm_bandwidth(collective, algorithm, protocol, bytes,
                                                        group, bus_bandwidth);
  return t;
}

NcclTime nccl_collective(NcclCollective collective, double bytes, const NcclGroup& group,
                         double bus_bandwidth) {
  NcclTime best{NcclAlgorithm::Ring, NcclProtocol::Simple, 0,
                std::numeric_limits<double>::infinity()};
  for (NcclAlgorithm a : {NcclAlgorithm::Ring, NcclAlgorithm::Tree}) {
    if (a == NcclAlgorithm::Tree && collective != NcclCollective::AllReduce) continue;
    for (NcclProtocol p : {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple}) {
      const NcclTime t = nccl_time(collective, a, p, bytes, group, bus_bandwidth);
      if (t.seconds < best.seconds) best = t;
    }
  }
  return best;
}

bool nccl_collectives(const Scenario& scenario) {
  const RuntimeSpec& r = scenario.runtime;
  return scenario.cluster.device.kind == DeviceKind::Gpu &&
         scenario.cluster.ranks_per_device == 1 &&
         !(r.backend == Backend::Gloo && r.device == RuntimeDevice::Cuda);
}

int dp_group_nodes(const LayoutSpec& layout, int gpus_per_node) {
  const int span = layout.dp_cp() * layout.tp;
  return std::min(layout.dp_cp(), std::max(1, (span + gpus_per_node - 1) / gpus_per_node));
}

}  // namespace dtwin
