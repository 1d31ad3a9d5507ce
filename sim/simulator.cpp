#include "sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <stdexcept>
#include <unordered_map>

#include "base/splitmix64.hpp"
#include "models/cost/gradient_bucket_sizes.hpp"
#include "models/cost/moe_layer.hpp"
#include "models/cost/nccl_model.hpp"
#include "models/cost/rank_sharing.hpp"
#include "models/cost/schedule_memory.hpp"
#include "schedules/transfer.hpp"
#include "sim/replica_fold.hpp"
#include "trace/step_figures.hpp"

namespace sg4 = simgrid::s4u;

namespace dtwin::sim {
namespace {

using sched::Action;
using sched::ActionKind;
using sched::of_kind;

// What NCCL's latency model needs of a pipeline rank's data-parallel groups: the nodes they span
// and the largest route latency between ring neighbours (seconds).
struct DpRing {
  int nodes = 1;
  double route_latency = 0;
};

// One pipeline transfer (a SEND and its RECV), from the first of them to be posted until the
// RECV ends. The transfer is a host-to-host comm started when the later of the two is posted, as
// a mailbox's rendezvous starts it, without a mailbox: SimGrid 3.32 keeps every detached comm in
// one list of maestro's that it walks on each comm's end, so detached puts made a step quadratic
// in the transfers under way across all ranks (most of a 2048-rank simulation's time).
struct Transfer {
  int sender = -1;         // -1 until the SEND is posted
  size_t send_index = 0;   // the SEND's event in World::sends[sender]
  sg4::ActorPtr receiver;  // set while the RECV, posted first, waits (suspended) for the SEND
  sg4::CommPtr comm;       // started once both are posted
};

// State every rank's actor reads and writes. SimGrid runs one actor at a time, so plain
// containers are safe.
struct World {
  const Scenario& scenario;
  const sched::Schedule& schedule;
  const CostModel& cost;
  const SimOptions& options;
  const Platform& platform;
  CollectiveModel collectives;
  int replicas;  // data-parallel replicas simulated (sim/replica_fold.hpp): dp indices 0 .. n-1
  std::unordered_map<std::string, Transfer> transfers;  // under way, by mailbox_of's name
  std::map<std::pair<int, int>, int> node_transfers;    // (from, to) node -> transfers under way
  std::vector<std::vector<trace::TimedAction>> sends;   // per rank, in posting order
  std::vector<std::vector<double>> loop_end;      // per rank and step: when its last action ended
  std::map<std::string, double> last_arrival;     // collective tag -> latest arrival
  std::map<std::pair<int, int>, int> unshards;    // (rank, stage) -> UNSHARDs so far
  std::map<std::pair<int, int>, int> reductions;  // (rank, stage) -> zero3_gather layer's so far
  std::vector<std::vector<trace::TimedAction>> events;  // per rank
  std::map<const sg4::Host*, int> computing;            // host -> ranks computing on it now
  // (host, profiled_block) -> ranks of that block computing on it now
  std::map<std::pair<const sg4::Host*, int>, int> computing_profiled;
  std::vector<double> cpu;              // per rank: seconds of compute alone on its core so far
  std::vector<std::mt19937_64> random;  // per rank: the stream of its actions' draws
  sg4::BarrierPtr step_end;             // all ranks, at the end of each step
  // Per pipeline rank, when NCCL runs the data-parallel collectives (nccl_collectives) and no
  // profile measured them; empty otherwise.
  std::vector<DpRing> dp_rings;
  std::unique_ptr<CostModel> balanced_cost;  // balanced_cost_model's
};

// The suffix that makes a mailbox or collective tag unique to step `step`.
std::string step_suffix(int step) {
  return "@" + std::to_string(step);
}

// The mailbox of a transfer of step `step`, named after its receiving end; `a` is the SEND or
// the RECV.
std::string mailbox_of(const sched::Layout& layout, int rank, const Action& a, int step) {
  const sched::Endpoint to =
      sched::is_receive(a.kind) ? sched::Endpoint{rank, a} : sched::receiver_of(layout, rank, a);
  return "p2p:" + std::to_string(to.rank) + ":" + sched::to_string(to.action) + step_suffix(step);
}

// What an instance of a compute action draws with sampled steps: `factor` scales its seconds,
// `weight` is its share in the sharing of its host's cores (SimGrid's priority: max-min shares a
// resource in proportion to it).
struct InstanceDraw {
  double factor = 1;
  double weight = 1;
};

// The draws of this instance of compute action `a` on `rank`; with one step, and for OPTIM, 1
// and 1. The factor is log-normal of mean 1 and coefficient of variation v = the profile's
// variation for its stage (sigma^2 = ln(1 + v^2), mu = -sigma^2 / 2). The weight is log-normal
// of median 1 whose log variance is what sharing the cores adds to the spread of an F or B while
// n ranks of the host compute, n counting those computing as it starts and itself:
// Profile::concurrency_log_variance at max(n x members, b) less at b, b the processes the
// profile's figures carry (Platform::sharing_baseline: the members alone, or more). The scheduler's
// unequal shares give one rank what they take from another, so that spread is a weight, not a
// longer or shorter pass, and a rank alone is not slowed. Drawn once per action, before it
// starts.
InstanceDraw draw_instance(World& world, int rank, const Action& a) {
  const Profile* profile = world.options.profile;
  if (world.options.steps <= 1 || !profile || a.kind == ActionKind::OPTIM) return {};
  // exp(N(mu, sigma2)), nothing drawn for sigma2 <= 0.
  const auto log_normal = [&](double mu, double sigma2) {
    if (sigma2 <= 0) return 1.0;
    std::normal_distribution<double> normal(mu, std::sqrt(sigma2));
    return std::exp(normal(world.random[rank]));
  };
  const double v = profile->stages.at(a.stage).variation;
  const double own = std::log1p(v * v);
  InstanceDraw draw;
  draw.factor = log_normal(-own / 2, own);
  const int members = world.platform.members_per_host;
  const int baseline = world.platform.sharing_baseline;
  const int busy = world.computing[world.platform.rank_hosts[rank]] + 1;
  draw.weight =
      log_normal(0, profile->concurrency_log_variance(std::max(busy * members, baseline)) -
                        profile->concurrency_log_variance(baseline));
  return draw;
}

// Seconds of a compute action alone on its device when they are known rather than derived from
// FLOPs: measured by the profile (the platform slows ranks computing at once as the profile's
// concurrency curve says), else from the kernel-level compute model of the device description,
// else nullopt.
std::optional<double> known_seconds(const World& world, const Action& a) {
  if (const Profile* profile = world.options.profile) {
    const StageSeconds& s = profile->stages.at(a.stage);
    return of_kind(a.kind, s.forward, s.backward, s.input_backward, s.weight_backward, s.optimizer);
  }
  if (const auto& k = world.cost.stage(a.stage).kernel)
    return of_kind(a.kind, k->forward, k->backward, k->input_backward, k->weight_backward,
                   k->optimizer);
  return std::nullopt;
}

double pass_flops(const CostModel& cost, const Action& a) {
  const StageCost& s = cost.stage(a.stage);
  return of_kind(a.kind, s.forward_flops, s.input_backward_flops + s.weight_backward_flops,
                 s.input_backward_flops, s.weight_backward_flops, s.optimizer_flops);
}

double model_flops(const World& world, const Action& a) {
  return pass_flops(world.cost, a);
}

// The profile timed a MoE stage's passes routing balanced (rt::StageRun), while the busiest
// member of an expert-parallel group computes model.moe.load_imbalance (ρ) times the mean
// member's routed copies and every member waits for it at the combine all-to-all: a profiled
// pass takes its FLOPs at ρ over its FLOPs balanced (world.balanced_cost) times its seconds.
double imbalance_scale(const World& world, const Action& a) {
  if (!world.balanced_cost) return 1;
  const double balanced = pass_flops(*world.balanced_cost, a);
  return balanced > 0 ? model_flops(world, a) / balanced : 1;
}

// The cost model at ρ = 1 for imbalance_scale: with a profile, a mixture of experts under
// expert parallelism and a busiest-member factor (moe_busiest_factor) other than 1; else null.
std::unique_ptr<CostModel> balanced_cost_model(const Scenario& scenario, const Profile* profile) {
  const MoeSpec& moe = scenario.model.moe;
  if (!profile || !moe.enabled() || scenario.layout.ep == 1 || moe_busiest_factor(moe) == 1)
    return nullptr;
  Scenario balanced = scenario;
  balanced.model.moe.load_imbalance = 1;
  return std::make_unique<CostModel>(balanced);
}

// Seconds of the communication inside a compute action: its tensor-parallel collectives (unless
// a profile measured them, as it times a tensor-parallel member's passes with its group) and its
// offload transfers over the host link.
double inner_comm_seconds(const World& world, const Action& a) {
  const StageCost& s = world.cost.stage(a.stage);
  const Profile* profile = world.options.profile;
  const bool measured = profile && (profile->stages.at(a.stage).tp_forward > 0 ||
                                    profile->stages.at(a.stage).tp_backward > 0);
  const double forward = measured ? 0 : s.tp_forward_s;
  const double input_backward = measured ? 0 : s.tp_input_backward_s;
  return of_kind(a.kind, forward + s.host_pass_s, input_backward + s.host_pass_s,
                 input_backward + s.host_pass_s, 0, s.host_optimizer_s);
}

// A compute action's tensor-parallel collectives as the profile measured them inside its seconds
// (zeros without a profile or tensor parallelism): their seconds, and the CPU seconds their
// helper threads ran on the cores (StageSeconds::tp_forward_cpu), at most those seconds.
struct MeasuredCollectives {
  double seconds = 0, helper_cpu = 0;
};
MeasuredCollectives measured_tp(const World& world, const Action& a) {
  const Profile* profile = world.options.profile;
  if (!profile || a.kind == ActionKind::OPTIM) return {};
  const StageSeconds& s = profile->stages.at(a.stage);
  const double seconds = of_kind(a.kind, s.tp_forward, s.tp_backward, s.tp_backward, 0, 0);
  const double cpu = of_kind(a.kind, s.tp_forward_cpu, s.tp_backward_cpu, s.tp_backward_cpu, 0, 0);
  return {seconds, std::min(cpu, seconds)};
}

// The block of schedule ranks whose members the profile ran together (profiled_schedule_ranks:
// a context-parallel group of tensor-parallel groups, or an expert-parallel group) that holds
// `rank`: consecutive data-parallel indices of one pipeline rank.
int profiled_block(const World& world, int rank) {
  return rank / profiled_schedule_ranks(world.scenario);
}

// Seconds a pass whose tensor-parallel collectives the profile measured waits in them beyond the
// profile's figure while other processes of its host compute: each collective waits for the
// partner member, which first waits for a core, as a rank resuming after a wait does
// (Profile::resume_delay, one per collective). The profile ran the group with the other groups
// of its profiled_block, so their computing is in its figure already; the others are the
// processes of the ranks computing outside it. cp2-tp2 (its 2 groups on one 2-core host, all in
// the profile): counting its partner group added 6.4 ms per F and 11.3 per B to the profile's
// 47.9 and 60.8 ms of collectives, which training measured at 48.7 and 61.4.
double partner_delay_seconds(World& world, int rank, const Action& a) {
  const StageCost& s = world.cost.stage(a.stage);
  const double count = of_kind(a.kind, s.tp_forward_collectives, s.tp_input_backward_collectives,
                               s.tp_input_backward_collectives, 0, 0);
  const sg4::Host* host = world.platform.rank_hosts[rank];
  const int outside =
      world.computing[host] - world.computing_profiled[{host, profiled_block(world, rank)}];
  return count * world.options.profile->resume_delay(outside * world.platform.members_per_host);
}

// True where compute actions get TimedAction::cpu, as the runtime measures it: on a CPU device,
// one thread per process (a schedule rank's tensor-parallel members have at most one core each),
// with figures of the rank's own (a profile's walls shared with more processes, Platform::
// sharing_baseline, hold their waits for a core: not a CPU time).
bool records_cpu(const World& world) {
  return world.scenario.cluster.device.kind == DeviceKind::Cpu &&
         world.platform.threads_per_rank <= world.platform.members_per_host &&
         world.platform.sharing_baseline == world.platform.members_per_host;
}

// Runs `share` of a compute action, stretched by `slowdown` (communication overlapping it) and by
// this instance's draw's factor, with its weight in the cores' sharing (draw_instance);
// returns the seconds of communication inside it (inner_comm_seconds: Megatron's f/g
// all-reduces block the layer that issues them, so they add to its time; one execution of
// compute plus collectives keeps the event count of a step independent of tp).
double compute(World& world, int rank, const Action& a, const InstanceDraw& draw, double share = 1,
               double slowdown = 1) {
  const int threads = world.platform.threads_per_rank;
  sg4::Host* host = world.platform.rank_hosts[rank];
  const auto seconds = known_seconds(world, a);
  const double collectives = share * inner_comm_seconds(world, a);
  // A profiled pass holds its measured collectives: the rank waits in them off the cores, which
  // the ranks computing meanwhile take (with tp > 1 on a shared CPU, the other groups), except
  // for the work of their helper threads, which shares the cores; and, with other groups
  // computing as it starts, its partners' waits for a core.
  const auto [measured_collectives, helper_cpu] = measured_tp(world, a);
  // One member's seconds alone on its core: the profiled pass less its collectives, or its
  // FLOPs at the core's speed.
  const double alone =
      draw.factor * (seconds ? (*seconds - measured_collectives) * imbalance_scale(world, a)
                             : model_flops(world, a) / host->get_speed());
  world.cpu[rank] += share * slowdown * alone;
  // FLOPs per thread: a profiled pass is one member's; modelled FLOPs are the group's, split over
  // its cores.
  const double members = world.platform.members_per_host;
  const double work = alone * host->get_speed() * (seconds ? 1 : members / threads);
  const double per_thread = share * slowdown * work + collectives * host->get_speed();
  const double waits = measured_collectives > 0 ? measured_collectives - helper_cpu +
                                                      partner_delay_seconds(world, rank, a)
                                                : 0;
  ++world.computing[host];
  ++world.computing_profiled[{host, profiled_block(world, rank)}];
  sg4::this_actor::exec_init(per_thread)
      ->set_thread_count(threads)
      ->set_priority(draw.weight)
      ->start()
      ->wait();
  const double helper_start = sg4::Engine::get_clock();
  if (helper_cpu > 0) sg4::this_actor::execute(share * helper_cpu * host->get_speed());
  const double helper_seconds = sg4::Engine::get_clock() - helper_start;
  --world.computing[host];
  --world.computing_profiled[{host, profiled_block(world, rank)}];
  if (waits > 0) sg4::this_actor::sleep_for(share * waits);
  return collectives + helper_seconds + share * waits;
}

sim::Group dp_group(const World& world, int rank, int stage, int step) {
  const sched::Layout& layout = world.schedule.layout;
  sim::Group group;
  for (int d = 0; d < world.replicas; ++d)
    group.ranks.push_back(layout.group(d, layout.pipeline_rank_of_stage(stage)));
  group.size = layout.dp;
  group.me = layout.dp_index(rank);
  group.tag = "dp:" + std::to_string(stage) + step_suffix(step);
  return group;
}

// Under hybrid sharding (sched::Layout::dp_shard), `rank`'s shard group in its data-parallel
// group `all`: the dp_shard consecutive dp indices holding its own, tagged `all`'s tag +
// ":shard" + which (replicas_of reads that suffix). `all` itself without hybrid sharding.
sim::Group shard_group(const World& world, const sim::Group& all, int rank) {
  const sched::Layout& layout = world.schedule.layout;
  if (!layout.hybrid_shard()) return all;
  const int d = layout.dp_index(rank), size = layout.shard_size(), first = d - d % size;
  sim::Group group;
  group.ranks.assign(all.ranks.begin() + first, all.ranks.begin() + first + size);
  group.me = d - first;
  group.tag = all.tag + ":shard" + std::to_string(d / size);
  return group;
}

// The groups that hold the same shard as the member `shard.me` of shard group `shard`
// (shard_group): the dp / dp_shard groups of its pipeline rank whose dp index is congruent to
// its own mod dp_shard, tagged as `shard`'s collective with ":replicas<j>" for ":shard<k>".
sim::Group replicas_of(const World& world, const sim::Group& shard) {
  const sched::Layout& layout = world.schedule.layout;
  const int rank = shard.ranks[shard.me], size = layout.shard_size();
  const int d = layout.dp_index(rank), pipeline_rank = layout.pipeline_rank(rank);
  sim::Group group;
  for (int k = d % size; k < layout.dp; k += size)
    group.ranks.push_back(layout.group(k, pipeline_rank));
  group.me = d / size;
  // `shard`'s tag with ":shard<k>" (and not what follows it: a bucket's) put ":replicas<j>".
  const size_t at = shard.tag.rfind(":shard");
  const size_t end = shard.tag.find_first_not_of("0123456789", at + 6);
  group.tag = shard.tag.substr(0, at) + ":replicas" + std::to_string(d % size) +
              (end == std::string::npos ? "" : shard.tag.substr(end));
  return group;
}

// The DpRing of a ring over `ranks`: the nodes they span and its largest route latency.
DpRing ring_of(const std::vector<int>& ranks, const Platform& platform) {
  std::set<int> nodes;
  for (int rank : ranks) nodes.insert(platform.rank_nodes[rank]);
  return {static_cast<int>(nodes.size()), sim::max_ring_latency(ranks, platform)};
}

// The DpRing of each pipeline rank's data-parallel groups (every replica's group of a pipeline
// rank spans the same nodes): the nodes of all dp members, the route latency of the ring of the
// `replicas` simulated (whose largest hop, between nodes when the group spans several, is the
// whole ring's); empty when NCCL does not price the collectives.
std::vector<DpRing> dp_rings(const Scenario& scenario, const sched::Layout& layout,
                             const Platform& platform, const Profile* profile, int replicas) {
  std::vector<DpRing> rings;
  if (!nccl_collectives(scenario) || profile) return rings;
  for (int p = 0; p < layout.pp; ++p) {
    std::vector<int> ranks;
    std::set<int> nodes;
    for (int d = 0; d < layout.dp; ++d) {
      if (d < replicas) ranks.push_back(layout.group(d, p));
      nodes.insert(platform.rank_nodes[layout.group(d, p)]);
    }
    rings.push_back({static_cast<int>(nodes.size()), sim::max_ring_latency(ranks, platform)});
  }
  return rings;
}

// Seconds a data-parallel ring of `bytes` waits after its messages under NCCL: NCCL's latency for
// the algorithm and protocol it picks (models/cost/nccl_model.hpp; the bus bandwidth is the
// intra-node link's within a node, else the inter-node link's) less the route latencies that the
// ring's 2(N−1) or N−1 steps already took, never negative. 0 without NCCL.
double nccl_extra_latency(const World& world, const sim::Group& group, ActionKind kind,
                          double bytes) {
  const int n = group.members();
  if (world.dp_rings.empty() || n < 2) return 0;
  // A hybrid-sharding group (part of the data-parallel group) spans nodes of its own.
  const DpRing ring = n < world.schedule.layout.dp
                          ? ring_of(group.ranks, world.platform)
                          : world.dp_rings[world.schedule.layout.pipeline_rank(group.ranks[0])];
  const NcclCollective collective = kind == ActionKind::ALLREDUCE ? NcclCollective::AllReduce
                                    : kind == ActionKind::UNSHARD ? NcclCollective::AllGather
                                                                  : NcclCollective::ReduceScatter;
  const int steps = collective == NcclCollective::AllReduce ? 2 * (n - 1) : n - 1;
  const ClusterSpec& cluster = world.scenario.cluster;
  const double bandwidth = (ring.nodes == 1 ? cluster.intra_node : cluster.inter_node).bandwidth;
  const NcclTime nccl = nccl_collective(collective, bytes, {n, ring.nodes}, bandwidth);
  return std::max(0.0, nccl.latency_s - steps * ring.route_latency);
}

// Runs the algorithm of a data-parallel collective of `bytes`: ALLREDUCE (the scenario's
// dp_sync), REDUCE_GRAD (ring reduce-scatter) or UNSHARD (ring all-gather); a ring under NCCL
// then waits nccl_extra_latency. `ring` is collective_of's group: under hybrid sharding a
// REDUCE_GRAD's and an UNSHARD's shard group (shard_group); the REDUCE_GRAD then all-reduces the
// reduced shard, bytes / the shard group's size, across replicas_of that group (HSDP: FSDP2's
// reduce-scatter, then all-reduce over the replicate dimension).
void run_collective(const World& world, const sim::Group& ring, ActionKind kind, double bytes) {
  const Platform& platform = world.platform;
  sim::Group group = ring;
  group.extra_latency_s = nccl_extra_latency(world, ring, kind, bytes);
  if (kind != ActionKind::ALLREDUCE) {
    ring_half(group, bytes, world.collectives, platform,
              kind == ActionKind::UNSHARD ? platform.gather_cpu_s_per_byte
                                          : platform.reduce_scatter_cpu_s_per_byte);
    if (kind == ActionKind::REDUCE_GRAD && world.schedule.layout.hybrid_shard()) {
      const double shard = bytes / static_cast<double>(ring.ranks.size());
      sim::Group across = replicas_of(world, ring);
      across.extra_latency_s = nccl_extra_latency(world, across, ActionKind::ALLREDUCE, shard);
      ring_allreduce(across, shard, world.collectives, platform);
    }
  } else if (world.schedule.layout.dp_sync == sched::DpSync::GatherScatter)
    gather_scatter(group, bytes, world.platform);
  else
    ring_allreduce(group, bytes, world.collectives, world.platform);
}

// The data-parallel group of action `a` (ALLREDUCE, REDUCE_GRAD or UNSHARD) of step `step` with
// a tag unique to this instance (under hybrid sharding a REDUCE_GRAD's and an UNSHARD's shard
// group), and the bytes it moves: gradients (at training.grad_precision), the weights gathered by
// UNSHARD (at the training precision) or, for weight averaging, the fp32 weights.
std::pair<sim::Group, double> collective_of(World& world, int rank, const Action& a, int step) {
  sim::Group group = dp_group(world, rank, a.stage, step);
  if (a.kind == ActionKind::UNSHARD)
    group.tag =
        "ag:" + std::to_string(a.stage) + ":" + std::to_string(world.unshards[{rank, a.stage}]++);
  else if (a.kind == ActionKind::REDUCE_GRAD)
    group.tag = "rs:" + std::to_string(a.stage) + step_suffix(step);
  if (a.kind == ActionKind::REDUCE_GRAD && world.scenario.layout.gathers_layers())
    group.tag += ":" + std::to_string(world.reductions[{rank, a.stage}]++);  // one per microbatch
  if (a.kind != ActionKind::ALLREDUCE) group = shard_group(world, group, rank);
  if (a.kind == ActionKind::UNSHARD) return {group, world.cost.weight_bytes(a.stage)};
  const bool averaged = a.kind == ActionKind::ALLREDUCE &&
                        world.schedule.layout.dp_sync == sched::DpSync::WeightAverage;
  return {group, averaged ? world.cost.parameter_bytes(a.stage)
                          : world.cost.data_parallel_gradient_bytes(a.stage)};
}

// Runs a data-parallel collective of the stage (`share` of its bytes) and returns its exposed
// seconds: from the last member's arrival to the end.
double dp_collective(World& world, int rank, const Action& a, int step, double share = 1) {
  const auto [group, bytes] = collective_of(world, rank, a, step);
  double& arrival = world.last_arrival[group.tag];
  arrival = std::max(arrival, sg4::Engine::get_clock());
  run_collective(world, group, a.kind, bytes * share);
  return sg4::Engine::get_clock() - world.last_arrival[group.tag];
}

// Runs the work a gradient synchronisation of `stage` does on `rank`'s core beside its
// collective, as the profile measured it (StageSeconds::sync_local: packing the gradients and
// writing their average back, or keeping the reduced shard), sharing the host's cores with the
// ranks computing; returns its seconds (0 without a profile).
double sync_local_seconds(World& world, int rank, int stage) {
  const Profile* profile = world.options.profile;
  const double seconds = profile ? profile->stages.at(stage).sync_local : 0;
  if (seconds <= 0) return 0;
  const double start = sg4::Engine::get_clock();
  sg4::this_actor::execute(seconds * world.platform.rank_hosts[rank]->get_speed());
  return sg4::Engine::get_clock() - start;
}

// Starts a collective in an actor of its own on the rank's host, so that compute goes on.
sg4::ActorPtr start_collective(const World& world, int rank, const sim::Group& group,
                               ActionKind kind, double bytes) {
  return sg4::Actor::create(
      group.tag + ":" + std::to_string(rank), world.platform.rank_hosts[rank],
      [&world, group, kind, bytes] { run_collective(world, group, kind, bytes); });
}

// Waits for `actors`; returns the seconds waited.
double join_all(std::vector<sg4::ActorPtr>& actors) {
  const double start = sg4::Engine::get_clock();
  for (const sg4::ActorPtr& actor : actors) actor->join();
  actors.clear();
  return sg4::Engine::get_clock() - start;
}

// Communication a rank has started and not yet waited for.
struct InFlight {
  std::map<int, std::vector<sg4::ActorPtr>> buckets;  // stage -> gradient buckets
  std::map<int, std::vector<sg4::ActorPtr>> gathers;  // stage -> prefetched parameter gathers
};

// The slowdown of compute that overlapped communication inflicts (device description; 1 without
// one).
double overlap_slowdown(const World& world) {
  const auto& device = world.scenario.cluster.device.description;
  return device ? device->overlap_slowdown : 1;
}

// The last backward of a stage that produces its weight gradients (B or W), split into its
// gradient buckets: after each share of the computation, that bucket's reduction starts
// (Megatron-LM's overlap_grad_reduce; with pipelining only the last microbatch overlaps). The
// shares after the first run while buckets are in flight, stretched by overlap_slowdown.
double compute_with_buckets(World& world, int rank, const Action& a, const InstanceDraw& draw,
                            int step, InFlight& flight) {
  const int n = even_bucket_count(world.scenario, world.cost, a.stage);
  Action reduction{
      a.stage, world.schedule.layout.zero > 0 ? ActionKind::REDUCE_GRAD : ActionKind::ALLREDUCE};
  auto [group, bytes] = collective_of(world, rank, reduction, step);
  double collectives = 0;
  for (int k = 0; k < n; ++k) {
    collectives += compute(world, rank, a, draw, 1.0 / n, k == 0 ? 1 : overlap_slowdown(world));
    sim::Group bucket = group;
    bucket.tag += ":bucket" + std::to_string(k);
    flight.buckets[a.stage].push_back(
        start_collective(world, rank, bucket, reduction.kind, bytes / n));
  }
  return collectives;
}

// Under zero3_gather layer, the backward (B or W) that completes a microbatch's weight gradients,
// computed in two shares: after its first gather unit's, the reduce-scatter of the other units'
// gradients starts and runs under the rest, stretched by overlap_slowdown (DeepSpeed ZeRO-3 and
// FSDP reduce-scatter each layer's gradients as its backward ends). The last unit's share is left
// to the REDUCE_GRAD that follows, exposed. `slowdown`: the first share's (gathers in flight).
double compute_with_layer_reduction(World& world, int rank, const Action& a,
                                    const InstanceDraw& draw, int step, double slowdown,
                                    InFlight& flight) {
  const int units = world.cost.gather_units(a.stage);
  double collectives = compute(world, rank, a, draw, 1.0 / units, slowdown);
  if (units == 1) return collectives;
  const Action reduction{a.stage, ActionKind::REDUCE_GRAD};
  const auto [group, bytes] = collective_of(world, rank, reduction, step);
  flight.buckets[a.stage].push_back(
      start_collective(world, rank, group, reduction.kind, bytes * (units - 1) / units));
  return collectives + compute(world, rank, a, draw, 1 - 1.0 / units, overlap_slowdown(world));
}

// Indices of the B or W that the next REDUCE_GRAD of its stage follows (zero3_gather layer).
std::set<size_t> reduced_backwards(const sched::ActionList& actions) {
  std::set<size_t> out;
  std::map<int, size_t> last;  // stage -> its latest B or W
  for (size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    if (a.kind == ActionKind::B || a.kind == ActionKind::W) last[a.stage] = i;
    if (a.kind == ActionKind::REDUCE_GRAD && last.count(a.stage)) out.insert(last.at(a.stage));
  }
  return out;
}

// Index in the rank's list of each stage's last B or W: where its weight gradients are complete.
std::map<int, size_t> last_gradient_actions(const sched::ActionList& actions) {
  std::map<int, size_t> last;
  for (size_t i = 0; i < actions.size(); ++i)
    if (actions[i].kind == ActionKind::B || actions[i].kind == ActionKind::W)
      last[actions[i].stage] = i;
  return last;
}

// Counts a pipeline transfer from rank `from` to rank `to` as started (change = 1) or ended (-1)
// in World::node_transfers when the ranks are on different nodes.
void count_transfer(World& world, int from, int to, int change) {
  const int a = world.platform.rank_nodes[from], b = world.platform.rank_nodes[to];
  if (a != b) world.node_transfers[{a, b}] += change;
}

// Starts `transfer` of `bytes` from rank `sender` to rank `receiver`, counted in
// World::node_transfers until its RECV ends.
void start_transfer(World& world, Transfer& transfer, int sender, int receiver, double bytes) {
  count_transfer(world, sender, receiver, 1);
  transfer.comm = sg4::Comm::sendto_async(world.platform.rank_hosts[sender],
                                          world.platform.rank_hosts[receiver], bytes);
}

// A receive posted after its send starts the transfer once Gloo's ready message reaches the
// sender: Profile::inter_host_queue_delay later while a transfer from the receiver's node to the
// sender's is under way, as that message then waits behind it in the link's queue.
void wait_for_ready_message(World& world, int sender, int receiver) {
  const Profile* profile = world.options.profile;
  if (!profile || profile->inter_host_queue_delay <= 0) return;
  const int from = world.platform.rank_nodes[receiver], to = world.platform.rank_nodes[sender];
  if (from != to && world.node_transfers[{from, to}] > 0)
    sg4::this_actor::sleep_for(profile->inter_host_queue_delay);
}

// A rank that waited resumes when the scheduler gives it a core back: with other ranks of its
// host computing, the profile's resume_delay later (Profile::wake_delay).
void resume_after_wait(World& world, int rank) {
  if (!world.options.profile) return;
  const sg4::Host* host = world.platform.rank_hosts[rank];
  const double delay = world.options.profile->resume_delay(world.computing[host]);
  if (delay > 0) sg4::this_actor::sleep_for(delay);
}

// A receive posted after its send, at `posted` while `busy` other ranks of its host computed,
// ends no earlier than the profile's late_receive_seconds(busy) after its posting.
void finish_late_receive(World& world, double posted, int busy) {
  if (!world.options.profile) return;
  const double end = posted + world.options.profile->late_receive_seconds(busy);
  if (end > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(end);
}

// One step of `rank`'s list of actions; `last_gradient`: last_gradient_actions of the list;
// `reduced`: its reduced_backwards under zero3_gather layer, else empty; `memory`: its
// action_memory_bytes, which its events carry.
void run_step(World& world, int rank, int step, const std::map<int, size_t>& last_gradient,
              const std::set<size_t>& reduced, const std::vector<ActionMemory>& memory) {
  const sched::Layout& layout = world.schedule.layout;
  const LayoutSpec& spec = world.scenario.layout;
  const double bytes = world.cost.boundary_bytes();
  const sched::ActionList& actions = world.schedule.ranks[rank];
  const bool layers = spec.gathers_layers();
  const bool buckets = spec.gradient_buckets();
  InFlight flight;
  for (size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    trace::TimedAction event{rank, a, step, sg4::Engine::get_clock(), 0, 0};
    event.memory = memory[i].after;
    event.peak_memory = memory[i].peak;
    switch (a.kind) {
      case ActionKind::SEND_F:
      case ActionKind::SEND_B: {
        // Not waited for: the receiver dates the send.
        Transfer& transfer = world.transfers[mailbox_of(layout, rank, a, step)];
        transfer.sender = rank;
        transfer.send_index = world.sends[rank].size();
        world.sends[rank].push_back(event);
        // The transfer starts now if its receive is posted, else when the receive is posted.
        if (transfer.receiver) {
          start_transfer(world, transfer, rank, sched::receiver_of(layout, rank, a).rank, bytes);
          transfer.receiver->resume();
        }
        continue;
      }
      case ActionKind::RECV_F:
      case ActionKind::RECV_B: {
        const std::string box = mailbox_of(layout, rank, a, step);
        Transfer& transfer = world.transfers[box];
        // Posted after its send: Gloo's rendezvous needs both progress threads (late_receive).
        const bool late = transfer.sender >= 0;
        const int busy = world.computing[world.platform.rank_hosts[rank]];
        if (late) {
          wait_for_ready_message(world, transfer.sender, rank);
          start_transfer(world, transfer, transfer.sender, rank, bytes);
        } else {
          transfer.receiver = sg4::Actor::self();
          sg4::this_actor::suspend();  // until the SEND starts the comm
        }
        transfer.comm->wait();
        if (late)
          finish_late_receive(world, event.start, busy);
        else if (sg4::Engine::get_clock() > event.start)
          resume_after_wait(world, rank);
        event.end = sg4::Engine::get_clock();
        const int sender = transfer.sender;
        count_transfer(world, sender, rank, -1);
        trace::TimedAction& send = world.sends[sender][transfer.send_index];
        send.end = event.end;
        event.exposed_comm = event.end - std::max(event.start, send.start);
        world.transfers.erase(box);
        break;
      }
      case ActionKind::ALLREDUCE:
      case ActionKind::REDUCE_GRAD:
        if (layers) {  // the other units' reductions, then the last unit's
          const int units = world.cost.gather_units(a.stage);
          event.exposed_comm = join_all(flight.buckets[a.stage]) +
                               dp_collective(world, rank, a, step, 1.0 / units) +
                               sync_local_seconds(world, rank, a.stage);
        } else {
          event.exposed_comm = buckets ? join_all(flight.buckets[a.stage])
                                       : dp_collective(world, rank, a, step) +
                                             sync_local_seconds(world, rank, a.stage);
        }
        event.end = sg4::Engine::get_clock();
        break;
      case ActionKind::UNSHARD:
        if (layers) {
          // The first unit's gather exposed, the others prefetched under the pass (DeepSpeed
          // ZeRO-3's and FSDP's gather of the next module while one runs).
          const int units = world.cost.gather_units(a.stage);
          event.exposed_comm = dp_collective(world, rank, a, step, 1.0 / units);
          if (units > 1) {
            const auto [group, gather_bytes] = collective_of(world, rank, a, step);
            flight.gathers[a.stage].push_back(
                start_collective(world, rank, group, a.kind, gather_bytes * (units - 1) / units));
          }
          event.end = sg4::Engine::get_clock();
        } else if (spec.overlap_param_gather) {
          // Prefetched: ZeRO-3's gather runs under the stage's next computation, ZeRO-1/2's
          // under the next step's forward (Megatron-LM's overlap_param_gather).
          const auto [group, gather_bytes] = collective_of(world, rank, a, step);
          sg4::ActorPtr gather = start_collective(world, rank, group, a.kind, gather_bytes);
          if (layout.zero == 3) flight.gathers[a.stage].push_back(gather);
          event.end = event.start;
        } else {
          event.exposed_comm = dp_collective(world, rank, a, step);
          event.end = sg4::Engine::get_clock();
        }
        break;
      case ActionKind::RESHARD:  // frees the gathered weights: memory, no time
        event.end = event.start;
        break;
      default: {
        const double cpu_before = world.cpu[rank];
        const InstanceDraw draw = draw_instance(world, rank, a);
        const bool prefetched = !flight.gathers[a.stage].empty();
        const double slowdown = prefetched ? overlap_slowdown(world) : 1;
        const bool last = buckets && sched::is_compute(a.kind) && last_gradient.count(a.stage) &&
                          last_gradient.at(a.stage) == i;
        if (reduced.count(i))
          event.exposed_comm =
              compute_with_layer_reduction(world, rank, a, draw, step, slowdown, flight);
        else
          event.exposed_comm = last ? compute_with_buckets(world, rank, a, draw, step, flight)
                                    : compute(world, rank, a, draw, 1, slowdown);
        if (prefetched) event.exposed_comm += join_all(flight.gathers[a.stage]);
        event.end = sg4::Engine::get_clock();
        if (records_cpu(world)) {
          event.cpu = world.cpu[rank] - cpu_before;
          event.comm_cpu = measured_tp(world, a).helper_cpu;
        }
      }
    }
    world.events[rank].push_back(event);
  }
  world.loop_end[rank].push_back(sg4::Engine::get_clock());
}

// options.steps steps of `rank`, each after every rank ended the one before.
void run_rank(World& world, int rank) {
  const sched::ActionList& actions = world.schedule.ranks[rank];
  const std::map<int, size_t> last_gradient = last_gradient_actions(actions);
  const std::set<size_t> reduced =
      world.scenario.layout.gathers_layers() ? reduced_backwards(actions) : std::set<size_t>{};
  const std::vector<ActionMemory> memory = action_memory_bytes(world.schedule, rank, world.cost);
  for (int step = 0; step < world.options.steps; ++step) {
    if (step > 0) world.step_end->wait();
    run_step(world, rank, step, last_gradient, reduced, memory);
  }
}

// Appends a rank's sends to its events. Its step ends when its last send of the step has
// arrived; the wait past its last action of that step is charged to the first send that ends
// last.
void close_sends(World& world, int rank) {
  std::vector<trace::TimedAction>& sends = world.sends[rank];
  std::vector<trace::TimedAction*> last(world.options.steps, nullptr);  // per step
  for (trace::TimedAction& send : sends)
    if (!last[send.step] || send.end > last[send.step]->end) last[send.step] = &send;
  for (int step = 0; step < world.options.steps; ++step)
    if (last[step])
      last[step]->exposed_comm = std::max(0.0, last[step]->end - world.loop_end[rank][step]);
  world.events[rank].insert(world.events[rank].end(), sends.begin(), sends.end());
}

}  // namespace

SimResult simulate(const Scenario& input, const sched::Schedule& schedule, const CostModel& cost,
                   const SimOptions& options) {
  Scenario scenario = input;
  if (options.profile && options.profile->p2p_bandwidth > 0)
    scenario.cluster.intra_node = {options.profile->p2p_bandwidth, options.profile->p2p_latency};
  // A message between nodes crosses the intra-node and the inter-node latency.
  if (options.profile && options.profile->inter_host_bandwidth > 0)
    scenario.cluster.inter_node = {
        options.profile->inter_host_bandwidth,
        std::max(0.0, options.profile->inter_host_latency - scenario.cluster.intra_node.latency)};

  const auto engine = make_engine();
  const sched::Layout& layout = schedule.layout;
  const CollectiveModel collectives = options.collectives.value_or(
      layout.dp <= kMessageGroupLimit ? CollectiveModel::Message : CollectiveModel::Flow);
  const int replicas = options.fold_replicas
                           ? simulated_replicas(scenario, layout, collectives, options.steps,
                                                options.profile != nullptr)
                           : layout.dp;
  std::vector<bool> simulated(layout.group_count());
  std::vector<int> simulated_ranks;
  for (int rank = 0; rank < layout.group_count(); ++rank)
    if ((simulated[rank] = layout.dp_index(rank) < replicas)) simulated_ranks.push_back(rank);
  const Platform platform = build_platform(scenario, options.profile, simulated);

  World world{scenario,
              schedule,
              cost,
              options,
              platform,
              collectives,
              replicas,
              {},
              {},
              std::vector<std::vector<trace::TimedAction>>(layout.group_count()),
              std::vector<std::vector<double>>(layout.group_count()),
              {},
              {},
              {},
              std::vector<std::vector<trace::TimedAction>>(layout.group_count()),
              {},
              {},
              std::vector<double>(layout.group_count()),
              {},
              sg4::Barrier::create(simulated_ranks.size()),
              dp_rings(scenario, layout, platform, options.profile, replicas),
              balanced_cost_model(scenario, options.profile)};
  if (options.steps < 1)
    throw std::invalid_argument("simulate: steps must be >= 1, got " +
                                std::to_string(options.steps));
  for (int rank = 0; rank < layout.group_count(); ++rank)
    world.random.emplace_back(splitmix64(options.seed ^ splitmix64(rank)));
  for (int rank : simulated_ranks)
    sg4::Actor::create("rank" + std::to_string(rank), platform.rank_hosts[rank],
                       [&world, rank] { run_rank(world, rank); });
  engine->run();
  for (int rank : simulated_ranks) close_sends(world, rank);

  SimResult result;
  result.simulated_replicas = replicas;
  for (auto& rank_events : world.events)
    result.events.insert(result.events.end(), rank_events.begin(), rank_events.end());
  result.summary = options.steps > 1
                       ? trace::summarize_steps(result.events, layout.group_count(), false)
                       : trace::summarize(result.events, layout.group_count());
  unfold_summary(result.summary, layout, replicas);
  trace::fill_predicted_memory(result.summary, schedule, cost);
  trace::fill_predicted_all_to_all(result.summary, schedule, scenario, cost);
  trace::fill_predicted_cp_exchange(result.summary, schedule, scenario, cost);
  trace::fill_predicted_dp_bytes(result.summary, schedule, scenario, cost);
  trace::fill_step_figures(result.summary, scenario, cost);
  return result;
}

}  // namespace dtwin::sim
