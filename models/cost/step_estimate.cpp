#include "models/cost/step_estimate.hpp"

#include <algorithm>
#include <stdexcept>

#include "models/cost/nccl_model.hpp"
#include "models/cost/parallel_memory.hpp"
#include "models/cost/rank_sharing.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "models/cost/schedule_memory.hpp"
#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"

namespace dtwin {
namespace {

using sched::ScheduleKind;

// Seconds of `flops` (per GPU) on a schedule rank, as the simulator's platform runs them: the
// rank carries the work of the group members sharing its device, on threads_per_rank cores of
// peak · efficiency / cores each.
double flop_seconds(const Scenario& scenario, double flops) {
  const DeviceSpec& d = scenario.cluster.device;
  return flops * members_per_device(scenario) * d.cores /
         (threads_per_rank(scenario) * d.peak_flops * d.efficiency);
}

// How many times over the device's cores its ranks' threads oversubscribe them (at least 1).
double oversubscription(const Scenario& scenario) {
  const ClusterSpec& c = scenario.cluster;
  return std::max(1.0, double(c.ranks_per_device) / members_per_device(scenario) *
                           threads_per_rank(scenario) / c.device.cores);
}

// Seconds of one microbatch's F and B (I + W) of stage `s`, their collectives included, and of
// the stage's optimizer step.
struct StageSeconds {
  double forward = 0, backward = 0, optimizer = 0;
};

StageSeconds stage_seconds(const Scenario& scenario, const StageCost& c) {
  StageSeconds t;
  if (c.kernel) {
    t = {c.kernel->forward, c.kernel->backward, c.kernel->optimizer};
  } else {
    t = {flop_seconds(scenario, c.forward_flops),
         flop_seconds(scenario, c.input_backward_flops + c.weight_backward_flops),
         flop_seconds(scenario, c.optimizer_flops)};
  }
  t.forward += c.tp_forward_s + c.host_pass_s;
  t.backward += c.tp_input_backward_s + c.host_pass_s;
  t.optimizer += c.host_optimizer_s;
  return t;
}

// The link a data-parallel group of tp·dp·cp GPUs crosses.
const LinkSpec& dp_link(const Scenario& scenario) {
  const ClusterSpec& c = scenario.cluster;
  const LayoutSpec& l = scenario.layout;
  return l.tp * l.dp_cp() <= c.devices_per_node * c.ranks_per_device ? c.intra_node : c.inter_node;
}

// Exposed seconds of the data-parallel gradient synchronization of `gradient_bytes`: an
// all-reduce or, under ZeRO, a reduce-scatter of the gradients and an all-gather of the weights,
// which are bytes_per_element / grad_bytes_per_element as large. Under hybrid sharding
// (layout.dp_shard) those two run inside the shard group of s = dp_shard·cp GPUs (on the
// intra-node link when its tp·s GPUs fit in a node) and each reduction adds an all-reduce of the
// reduced shard, bytes / s, across the r = dp / dp_shard shard groups (on dp_link's link, per
// microbatch under zero3_gather layer). Under NCCL (nccl_collectives) each is NCCL's time for its
// fastest algorithm and protocol (models/cost/nccl_model.hpp), else a ring over the link (an
// all-reduce is two ring halves). ZeRO-3 with zero3_gather stage gathers the weights for F and
// for B once a step and reduce-scatters once: 1.5 times the pair. With zero3_gather layer the
// stage's `gather_units` units are gathered before each F and each B and reduce-scattered after
// each B, every microbatch, and the simulator exposes the first unit's share of each (the others
// run under the pass): m times a reduce-scatter and 2m times a gather of gradient_bytes / units,
// whatever the buckets.
double dp_seconds(const Scenario& scenario, const CostModel& cost, double gradient_bytes,
                  double bucket_bytes, int gather_units) {
  const LayoutSpec& l = scenario.layout;
  const int n = l.dp_cp();  // the gradients' group
  if (n == 1) return 0;
  const LinkSpec& link = dp_link(scenario);
  const bool layers = l.gathers_layers();
  const double m = l.microbatches;
  const double scatters = layers ? m : l.zero == 3 ? 1.5 : 1;
  const double gathers = layers ? 2 * m : l.zero == 3 ? 1.5 : 1;
  const double gather = l.zero > 0 ? cost.bytes_per_element() / cost.grad_bytes_per_element() : 1;
  const double exposed = layers                  ? gradient_bytes / gather_units
                         : l.overlap_grad_reduce ? std::min(gradient_bytes, bucket_bytes)
                                                 : gradient_bytes;
  const ClusterSpec& c = scenario.cluster;
  const int node = c.devices_per_node * c.ranks_per_device;
  // The ZeRO shard group (all n GPUs without hybrid sharding) and the replicas of a shard.
  const int shard = l.zero_group(), replicas = n / shard;
  const LinkSpec& shard_link = replicas > 1 && l.tp * shard <= node ? c.intra_node : link;
  const double reductions = layers ? m : 1;
  if (!nccl_collectives(scenario)) {
    const double sharded =
        scatters * ring_half_seconds(exposed, shard, shard_link.bandwidth, shard_link.latency) +
        gathers *
            ring_half_seconds(exposed * gather, shard, shard_link.bandwidth, shard_link.latency);
    if (replicas == 1) return sharded;
    return sharded + reductions * 2 *
                         ring_half_seconds(exposed / shard, replicas, link.bandwidth, link.latency);
  }
  LayoutSpec shard_layout = l;
  shard_layout.dp = shard / l.cp;
  const NcclGroup group{shard, dp_group_nodes(shard_layout, node)};
  const auto seconds = [&](NcclCollective collective, double bytes) {
    return nccl_collective(collective, bytes, group, shard_link.bandwidth).seconds;
  };
  if (l.zero == 0) return seconds(NcclCollective::AllReduce, exposed);
  const double sharded = scatters * seconds(NcclCollective::ReduceScatter, exposed) +
                         gathers * seconds(NcclCollective::AllGather, exposed * gather);
  if (replicas == 1) return sharded;
  // Replicas are shard·tp GPUs apart: each on a node of its own unless the whole group fits in
  // fewer nodes than there are replicas.
  const NcclGroup across{replicas, std::min(replicas, dp_group_nodes(l, node))};
  return sharded + reductions * nccl_collective(NcclCollective::AllReduce, exposed / shard, across,
                                                link.bandwidth)
                                    .seconds;
}

// The bubble of the schedule's unit-time dry run, in microbatches of a rank's work: pp - 1 for
// GPipe and 1F1B (3(m + pp - 1) units), (pp - 1)/v interleaved (3(v·m + pp - 1) chunk units),
// (pp - 1)/3 for ZB-H1, ZB-1p and ZB-2p (3m + pp - 1 units), (pp - 1)/6 for ZB-V and DualPipe-V
// (6m + pp - 1 chunk units).
double bubble_microbatches(const LayoutSpec& l) {
  switch (l.schedule) {
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
      return l.pp - 1;
    case ScheduleKind::Interleaved1F1B:
      return double(l.pp - 1) / l.virtual_stages;
    case ScheduleKind::ZbH1:
    case ScheduleKind::Zb1p:
    case ScheduleKind::Zb2p:
      return (l.pp - 1) / 3.0;
    case ScheduleKind::ZbV:
    case ScheduleKind::DualPipeV:
      return (l.pp - 1) / 6.0;
  }
  throw std::logic_error("bubble_microbatches: unknown schedule kind");
}

}  // namespace

sched::Schedule memory_proxy(const LayoutSpec& l, const sched::PassTimes& times) {
  const sched::Layout layout{
      std::min(l.dp_cp(), 2), l.pp, l.virtual_stages, l.microbatches, l.dp_sync, l.zero, 1,
      l.zero3_gather};
  return sched::lower(sched::generate(l.schedule, layout, times));
}

StepEstimate estimate_step(const Scenario& scenario, const CostModel& cost) {
  return estimate_step(scenario, cost,
                       memory_proxy(scenario.layout, schedule_pass_times(scenario, cost)));
}

StepEstimate estimate_step(const Scenario& scenario, const CostModel& cost,
                           const sched::Schedule& proxy) {
  const LayoutSpec& l = scenario.layout;
  const double m = l.microbatches;
  StepEstimate e;
  e.peak_bytes.assign(l.pp, 0);
  const double bucket_bytes = cost.bucket_params() * cost.grad_bytes_per_element();
  // Each stage (model chunk) synchronizes its own gradients, as Megatron-LM's per-chunk gradient
  // buffers do: without overlap a rank's v collectives add up, each paying the ring's latencies;
  // with overlap_grad_reduce only a bucket of its last one is exposed.
  std::vector<double> work(l.pp, 0), optimizer(l.pp, 0), sync(l.pp, 0);
  for (int s = 0; s < cost.num_stages(); ++s) {
    const int r = proxy.layout.pipeline_rank_of_stage(s);
    const StageCost& c = cost.stage(s);
    const StageSeconds t = stage_seconds(scenario, c);
    work[r] += t.forward + t.backward;
    optimizer[r] += t.optimizer;
    const double stage_sync = dp_seconds(scenario, cost, cost.data_parallel_gradient_bytes(s),
                                         bucket_bytes, cost.gather_units(s));
    // A rank's stages gather and reduce per layer each in its own passes: their times add up.
    sync[r] = l.overlap_grad_reduce && !l.gathers_layers() ? std::max(sync[r], stage_sync)
                                                           : sync[r] + stage_sync;
  }
  double slowest = 0;
  for (int r = 0; r < l.pp; ++r) {
    slowest = std::max(slowest, work[r]);
    e.peak_bytes[r] = peak_memory_bytes(proxy, proxy.layout.group(0, r), cost);
  }
  e.bubble_s = bubble_microbatches(l) * slowest;
  // Ranks that share a device's cores cannot together run faster than the cores allow.
  e.pipeline_s = std::max(m * slowest + e.bubble_s, m * slowest * oversubscription(scenario));

  // Neighbouring pipeline ranks are dp·cp·tp GPUs apart (Megatron's rank order).
  const ClusterSpec& cluster = scenario.cluster;
  const LinkSpec& p2p = l.dp_cp() * l.tp < cluster.devices_per_node * cluster.ranks_per_device
                            ? cluster.intra_node
                            : cluster.inter_node;
  // The warm-up and cool-down cross every stage boundary of the pipeline once each way.
  const double p2p_s =
      l.pp > 1 ? 2 * (cost.num_stages() - 1) * (p2p.latency + cost.boundary_bytes() / p2p.bandwidth)
               : 0;
  double tail = 0;  // the slowest rank's gradient sync and optimizer step
  for (int r = 0; r < l.pp; ++r) tail = std::max(tail, sync[r] + optimizer[r]);
  e.optimizer_s = *std::max_element(optimizer.begin(), optimizer.end());
  e.exposed_comm_s = p2p_s + tail - e.optimizer_s;
  e.step_s = e.pipeline_s + p2p_s + tail;
  return e;
}

}  // namespace dtwin
