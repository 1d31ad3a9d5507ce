#include "sim/simulator.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <stdexcept>
#include <unordered_map>

#include "schedules/transfer.hpp"
#include "sim/memory.hpp"
#include "trace/step_figures.hpp"

namespace sg4 = simgrid::s4u;

namespace dtwin::sim {
namespace {

using sched::Action;
using sched::ActionKind;

int payload_token = 0;  // SimGrid moves a pointer; the byte count is what it times

// State every rank's actor reads and writes. SimGrid runs one actor at a time, so plain
// containers are safe.
struct World {
  const Scenario& scenario;
  const sched::Schedule& schedule;
  const CostModel& cost;
  const SimOptions& options;
  const Platform& platform;
  CollectiveModel collectives;
  std::unordered_map<std::string, double> send_posted;  // mailbox -> time its SEND was posted
  std::map<int, double> last_arrival;                   // stage -> latest ALLREDUCE arrival
  std::vector<std::vector<trace::TimedAction>> events;  // per rank
};

// The mailbox of a transfer, named after its receiving end; `a` is the SEND or the RECV.
std::string mailbox_of(const sched::Layout& layout, int rank, const Action& a) {
  const sched::Endpoint to =
      sched::is_receive(a.kind) ? sched::Endpoint{rank, a} : sched::receiver_of(layout, rank, a);
  return "p2p:" + std::to_string(to.rank) + ":" + sched::to_string(to.action);
}

// The figure of a compute action's kind: F, B, I, W, or the optimizer step for OPTIM.
double of_kind(ActionKind kind, double f, double b, double i, double w, double optimizer) {
  if (kind == ActionKind::OPTIM) return optimizer;
  const double figures[] = {f, b, i, w};  // ActionKind's order
  const auto index = static_cast<size_t>(kind);
  if (index >= std::size(figures))
    throw std::logic_error("simulator: " + std::string(sched::kind_name(kind)) +
                           " is not a compute action");
  return figures[index];
}

// Seconds of a compute action when they are known rather than derived from FLOPs: measured by
// the profile and stretched by its contention factor (the slowdown beyond the fair share of the
// cores when the device's ranks compute at once), else from the kernel-level compute model of
// the device description, else nullopt.
std::optional<double> known_seconds(const World& world, const Action& a) {
  if (const Profile* profile = world.options.profile) {
    const StageSeconds& s = profile->stages.at(a.stage);
    return of_kind(a.kind, s.forward, s.backward, s.input_backward, s.weight_backward,
                   s.optimizer) *
           profile->contention;
  }
  if (const auto& k = world.cost.stage(a.stage).kernel)
    return of_kind(a.kind, k->forward, k->input_backward + k->weight_backward, k->input_backward,
                   k->weight_backward, k->optimizer);
  return std::nullopt;
}

double model_flops(const World& world, const Action& a) {
  const StageCost& s = world.cost.stage(a.stage);
  return of_kind(a.kind, s.forward_flops, s.input_backward_flops + s.weight_backward_flops,
                 s.input_backward_flops, s.weight_backward_flops, s.optimizer_flops);
}

// Seconds of the tensor-parallel collectives inside a compute action.
double tensor_parallel_seconds(const World& world, const Action& a) {
  const StageCost& s = world.cost.stage(a.stage);
  return of_kind(a.kind, s.tp_forward_s, s.tp_input_backward_s, s.tp_input_backward_s, 0, 0);
}

// Runs a compute action; returns the seconds of tensor-parallel collectives it spent
// (Megatron's f/g all-reduces block the layer that issues them, so they add to its time; one
// execution of compute plus collectives keeps the event count of a step independent of tp).
double compute(World& world, int rank, const Action& a) {
  const int threads = world.platform.threads_per_rank;
  sg4::Host* host = world.platform.rank_hosts[rank];
  const auto seconds = known_seconds(world, a);
  const double collectives = tensor_parallel_seconds(world, a);
  // FLOPs per thread: the rank's work split over its cores.
  const double per_thread =
      (seconds ? *seconds * host->get_speed() : model_flops(world, a) / threads) +
      collectives * host->get_speed();
  sg4::this_actor::exec_init(per_thread)->set_thread_count(threads)->start()->wait();
  return collectives;
}

sim::Group dp_group(const World& world, int rank, int stage) {
  const sched::Layout& layout = world.schedule.layout;
  sim::Group group;
  for (int d = 0; d < layout.dp; ++d)
    group.ranks.push_back(layout.rank(d, layout.pipeline_rank_of_stage(stage)));
  group.me = layout.dp_index(rank);
  group.tag = "dp:" + std::to_string(stage);
  return group;
}

double dp_sync(World& world, int rank, int stage) {
  const sim::Group group = dp_group(world, rank, stage);
  const bool weights = world.schedule.layout.dp_sync == sched::DpSync::WeightAverage;
  const double bytes =
      weights ? world.cost.parameter_bytes(stage) : world.cost.gradient_bytes(stage);
  double& arrival = world.last_arrival[stage];
  arrival = std::max(arrival, sg4::Engine::get_clock());
  if (world.schedule.layout.dp_sync == sched::DpSync::GatherScatter)
    gather_scatter(group, bytes, world.platform);
  else
    ring_allreduce(group, bytes, world.collectives, world.platform);
  return sg4::Engine::get_clock() - world.last_arrival[stage];
}

// Throws std::logic_error at the first action this simulator cannot run yet (the sharding kinds).
// Checked before the engine starts: SimGrid aborts the process on an exception inside an actor.
void check_simulated(const sched::Schedule& schedule) {
  for (const sched::ActionList& actions : schedule.ranks)
    for (const Action& a : actions)
      if (sched::is_sharding(a.kind))
        throw std::logic_error("simulator: " + std::string(sched::kind_name(a.kind)) +
                               " is not simulated yet");
}

struct PendingSend {
  sg4::CommPtr comm;
  trace::TimedAction event;
};

void run_rank(World& world, int rank) {
  const sched::Layout& layout = world.schedule.layout;
  const double bytes = world.cost.boundary_bytes();
  std::vector<PendingSend> sends;
  for (const Action& a : world.schedule.ranks[rank]) {
    trace::TimedAction event{rank, a, 0, sg4::Engine::get_clock(), 0, 0};
    switch (a.kind) {
      case ActionKind::SEND_F:
      case ActionKind::SEND_B: {
        const std::string box = mailbox_of(layout, rank, a);
        world.send_posted[box] = event.start;
        sends.push_back({sg4::Mailbox::by_name(box)->put_async(&payload_token, bytes), event});
        continue;
      }
      case ActionKind::RECV_F:
      case ActionKind::RECV_B: {
        const std::string box = mailbox_of(layout, rank, a);
        sg4::Mailbox::by_name(box)->get<int>();
        event.end = sg4::Engine::get_clock();
        event.exposed_comm = event.end - std::max(event.start, world.send_posted.at(box));
        break;
      }
      case ActionKind::ALLREDUCE:
        event.exposed_comm = dp_sync(world, rank, a.stage);
        event.end = sg4::Engine::get_clock();
        break;
      default:
        event.exposed_comm = compute(world, rank, a);
        event.end = sg4::Engine::get_clock();
    }
    world.events[rank].push_back(event);
  }
  // A rank's step ends when its last send has left; the wait is charged to the last send.
  const double wait_start = sg4::Engine::get_clock();
  for (PendingSend& send : sends) send.comm->wait();
  const double wait_end = sg4::Engine::get_clock();
  bool charged = false;
  for (PendingSend& send : sends) {
    send.event.end = send.comm->get_finish_time();
    if (!charged && send.event.end == wait_end) {
      send.event.exposed_comm = wait_end - wait_start;
      charged = true;
    }
    world.events[rank].push_back(send.event);
  }
}

}  // namespace

SimResult simulate(const Scenario& input, const sched::Schedule& schedule, const CostModel& cost,
                   const SimOptions& options) {
  check_simulated(schedule);
  Scenario scenario = input;
  if (options.profile && options.profile->p2p_bandwidth > 0)
    scenario.cluster.intra_node = {options.profile->p2p_bandwidth, options.profile->p2p_latency};

  const auto engine = make_engine();
  const Platform platform = build_platform(scenario);

  const sched::Layout& layout = schedule.layout;
  World world{
      scenario,
      schedule,
      cost,
      options,
      platform,
      options.collectives.value_or(layout.dp <= kMessageGroupLimit ? CollectiveModel::Message
                                                                   : CollectiveModel::Flow),
      {},
      {},
      std::vector<std::vector<trace::TimedAction>>(layout.world_size())};
  for (int rank = 0; rank < layout.world_size(); ++rank)
    sg4::Actor::create("rank" + std::to_string(rank), platform.rank_hosts[rank],
                       [&world, rank] { run_rank(world, rank); });
  engine->run();

  SimResult result;
  for (auto& rank_events : world.events)
    result.events.insert(result.events.end(), rank_events.begin(), rank_events.end());
  result.summary = trace::summarize(result.events, layout.world_size());
  for (int rank = 0; rank < layout.world_size(); ++rank)
    result.summary.ranks[rank].peak_memory_bytes = peak_memory_bytes(schedule, rank, cost);
  trace::fill_step_figures(result.summary, scenario, cost);
  return result;
}

}  // namespace dtwin::sim
