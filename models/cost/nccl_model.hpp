// NCCL's cost model of a collective on GPUs: a latency that depends on the algorithm (ring,
// tree) and protocol (LL, LL128, Simple) plus bytes over a bandwidth that also depends on them,
// the fastest combination taken, as NCCL itself chooses. The constants are NCCL's own, from
// ncclTopoTuneModel and ncclTopoGetAlgoTime in src/graph/tuning.cc of NCCL 2.20.3-1
// (github.com/NVIDIA/nccl); the code is dtwin's.
//
// Per (algorithm a, protocol p), with n ranks on N nodes (n/N per node) and S bytes (the whole
// buffer of an all-reduce, the unsharded size of a reduce-scatter or all-gather):
//
//   time = latency(a, p) + S / algbw(a, p)
//   ring:  latency = base(a,p) + (steps − inter)·max(hw_nvlink(a,p), net_overhead)
//                    + inter·hw_net(a,p),  steps = 2(n−1) (all-reduce) or n−1,
//                    inter = min(steps, 2N) (all-reduce, N > 1) or N − 1, net_overhead = 1 µs
//                    (3 µs for Simple) across nodes, × 1.4 for Simple all-reduce across nodes
//          algbw = busbw · n / steps
//   tree (all-reduce only):
//          latency = base(a,p) + 2·((n/N − 1)·hw_nvlink(a,p) + ⌊log2 N⌋·hw_net(a,p))
//          algbw = busbw / 2 · correction(p, S)
//
// base, hw_nvlink and hw_net are NCCL's baseLat and hwLat tables (µs). busbw is the link
// bandwidth β that dtwin's ring model gives a GPU (the Simple ring's bus bandwidth), scaled per
// protocol as NCCL scales it: ring LL min(β/4, ll_max) (β/3 for a one-node reduce-scatter or
// all-gather), ring LL128 0.92·β (0.7·β with one GPU per node), tree 0.92·β, tree LL
// min(0.92·β/3.8, ll_max), tree LL128 0.92·β·7/9 (one node) or ·120/128; ll_max = 87.7 GB/s on
// one node, 39.0 on two, 20.4 on more (NCCL's Ampere/Hopper and Intel-host rows).
//
// Assumed, and not modelled: GPUs of one node joined by NVLink (NCCL's NVLink row; PCIe-only
// nodes use its PCI row), Ampere or Hopper GPUs, NCCL's per-channel bandwidth caps (they need
// the channel count of its topology search), NVLink SHARP (NVLS), CollNet and the network's
// own latency property (0 for InfiniBand).
#pragma once

#include "models/spec/scenario.hpp"

namespace dtwin {

enum class NcclCollective { AllReduce, ReduceScatter, AllGather };
enum class NcclAlgorithm { Ring, Tree };
enum class NcclProtocol { LL, LL128, Simple };

/// A communicator: `ranks` GPUs, one per rank, spread evenly over `nodes` nodes.
struct NcclGroup {
  int ranks = 1;
  int nodes = 1;
};

/// The time of one collective by one algorithm and protocol.
struct NcclTime {
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  double latency_s = 0;  ///< seconds, NCCL's latency term
  double seconds = 0;    ///< latency_s + bytes / algorithm bandwidth
};

/// Seconds of `collective` on `bytes` over `group` by `algorithm` and `protocol`, with
/// `bus_bandwidth` bytes/s (β above) per GPU (see the file comment; NCCL 2.20.3 tuning.cc).
/// Zero for a group of one rank. Throws std::invalid_argument for a tree on another collective
/// than an all-reduce (NCCL runs those as rings only) or a group with ranks or nodes < 1.
NcclTime nccl_time(NcclCollective collective, NcclAlgorithm algorithm, NcclProtocol protocol,
                   double bytes, const NcclGroup& group, double bus_bandwidth);

/// The fastest algorithm and protocol for `collective` on `bytes`, as NCCL picks them (minimum
/// of nccl_time over ring and tree, LL, LL128 and Simple). Zero for a group of one rank.
NcclTime nccl_collective(NcclCollective collective, double bytes, const NcclGroup& group,
                         double bus_bandwidth);

/// Whether NCCL runs the scenario's collectives: the simulated hosts are GPUs
/// (cluster.device.kind: gpu), one rank each, and the scenario does not run its ranks over Gloo
/// on CUDA (runtime.backend gloo with runtime.device cuda, whose links dtwin measures for Gloo).
/// Otherwise collectives are rings over the scenario's links (latency α per step).
bool nccl_collectives(const Scenario& scenario);

/// The nodes a data-parallel group of n = dp·cp GPUs (layout.dp_cp()) spans when the
/// tensor-parallel groups (tp consecutive GPUs) of its members are n · tp consecutive GPUs,
/// `gpus_per_node` to a node (Megatron-LM's rank order): ⌈n · tp / gpus_per_node⌉, at most n.
int dp_group_nodes(const LayoutSpec& layout, int gpus_per_node);

}  // namespace dtwin
