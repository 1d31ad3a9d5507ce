// The SimGrid platform of a scenario's cluster.
#pragma once

#include <memory>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <vector>

#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin::sim {

/// Hosts of the simulated cluster. Device d of node n is host n*devices_per_node + d. A schedule
/// rank is a tensor-parallel group of tp GPUs (tp = 1: one GPU); rank r runs on the host of its
/// first GPU, device r*tp / ranks_per_device, so ranks sharing a device contend for it. The
/// group's tp members run the same actions on equal shards at the same times, so one actor
/// stands for all of them; their collectives inside an action are timed in closed form by the
/// cost model (tensor-parallel traffic stays inside the node: it does not contend with the
/// pipeline and data-parallel flows simulated here).
struct Platform {
  /// Per device, node-major: its host, or nullptr for a device that holds no schedule rank (not
  /// built: with tp > 1 only a group's first GPU holds one).
  std::vector<simgrid::s4u::Host*> devices;
  std::vector<simgrid::s4u::Host*> rank_hosts;  ///< one per schedule rank (tensor-parallel group)
  std::vector<int> rank_nodes;                  ///< the node of each schedule rank
  int threads_per_rank = 1;                     ///< cores an execution of one schedule rank may use
  /// GPUs of a schedule rank's tensor-parallel group on its host: its executions carry that many
  /// members' work, so ranks sharing a device contend for it as the real ranks would.
  int members_per_host = 1;
  /// Processes of the host whose sharing of its cores a profile's figures carry
  /// (sharing_baseline): members_per_host, or the profile's processes_sharing_cores (at most the
  /// host's ranks_per_device) when more. The host slows its executions only while more
  /// processes than these compute.
  int sharing_baseline = 1;
  /// CPU seconds per byte a rank spends on each ring step of a data-parallel collective beyond
  /// the link's time (Profile::allreduce_overhead_s_per_byte; 0 without a profile): Gloo's
  /// copies and reduction, run as an execution on the rank's host so that it shares the cores
  /// with compute.
  double collective_cpu_s_per_byte = 0;
  /// The same for a step of ZeRO's all-gather and reduce-scatter
  /// (Profile::half_ring_overhead_s_per_byte of its allgather and reduce_scatter points).
  double gather_cpu_s_per_byte = 0;
  double reduce_scatter_cpu_s_per_byte = 0;
  /// Tensor-parallel members behind each schedule rank (layout.tp). Each member synchronises its
  /// own 1/tp of the stage's bytes with its data-parallel peers, all members at once, so a
  /// rank's CPU work in a data-parallel collective is one member's: bytes / tp.
  int group_members = 1;
};

/// Sets SimGrid's network model before the platform exists: CM02 (max-min sharing, latency +
/// size / bandwidth per flow) with the TCP factors off — no acknowledgement cross-traffic and no
/// TCP window bound — because the fabrics modelled (NVLink, InfiniBand RDMA, loopback) have
/// none, and the measured profile, not a TCP calibration, adjusts the figures.
void configure_network_model();

/// Creates the SimGrid engine (one per process) with logging at critical level only and the
/// network model above.
std::unique_ptr<simgrid::s4u::Engine> make_engine();

/// Builds the cluster with SimGrid's C++ platform API. Each device has a split-duplex link to its
/// node's switch (intra_node bandwidth per direction, latency intra/2 each way, so a device-to-
/// device message sees intra latency) and a loopback link (intra_node) for ranks sharing it.
/// Nodes join the network through a split-duplex link each (inter_node bandwidth, latency
/// inter/2): a star, or a two-level fat-tree of such links. A message between nodes sees
/// latency intra + inter. Host speed per core = peak_flops * efficiency / cores. A `profile`
/// sets collective_cpu_s_per_byte, gather_cpu_s_per_byte and reduce_scatter_cpu_s_per_byte. When it
/// has a measured concurrency curve, every device shares its cores as measured (SimGrid's
/// non-linear sharing policy): with n executions running, each computes at
/// concurrency_slowdown(b) / concurrency_slowdown(max(n · members_per_host, b)) of its speed
/// alone, b = sharing_baseline; otherwise max-min fair sharing.
/// `simulated` (per schedule rank; empty: all) leaves out the devices of ranks not simulated
/// (replicas folded, sim/replica_fold.hpp): their rank_hosts are nullptr, their rank_nodes kept.
Platform build_platform(const Scenario& scenario, const Profile* profile = nullptr,
                        const std::vector<bool>& simulated = {});

}  // namespace dtwin::sim
