#include "runtime/calibrate/compute_replay.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "models/nn/split_linear.hpp"
#include "runtime/calibrate/stage_run.hpp"
#include "runtime/flat_gradients.hpp"
#include "runtime/fused_adamw.hpp"
#include "runtime/rank_device.hpp"
#include "runtime/zero_stage.hpp"

namespace dtwin::rt {
namespace {

using sched::Action;
using sched::ActionKind;

// map[key] removed and returned; throws std::logic_error naming `a` when the schedule did not
// produce it first.
template <typename Map>
typename Map::mapped_type take(Map& map, const typename Map::key_type& key, const Action& a) {
  auto it = map.find(key);
  if (it == map.end())
    throw std::logic_error("compute replay: " + sched::to_string(a) +
                           " comes before the action that it needs");
  typename Map::mapped_type value = std::move(it->second);
  map.erase(it);
  return value;
}

// Bytes of the largest cache of CPU 0 (sysfs; 32 MiB when unreadable).
std::size_t last_level_cache_bytes() {
  std::size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::size_t kib = 0;
    if (in >> kib) largest = std::max(largest, kib << 10);
  }
  return largest ? largest : std::size_t{32} << 20;
}

// Writes twice the last-level cache's bytes, at most 64 MiB, as the other ranks computing on the
// machine do while this one waits: what this rank held in the caches is gone. The bound is for
// VMs, which report their host's whole shared cache: 480 MiB on an Intel Xeon VM of 2 vCPUs,
// where writing 960 MiB at each wait made the quickstart's profile take 55-60 s instead of
// 42-45 s, and 433 s under TSan.
void evict_caches() {
  constexpr std::size_t kLargestEviction = std::size_t{64} << 20;
  static thread_local std::vector<char> buffer(
      std::min(2 * last_level_cache_bytes(), kLargestEviction));
  static thread_local char round = 0;
  std::memset(buffer.data(), ++round, buffer.size());
}

// True where the rank waits in training before `actions[i]`, and other ranks compute meanwhile:
// at the step's start, and after a receive or a collective.
bool follows_wait(const sched::ActionList& actions, std::size_t i) {
  return i == 0 || sched::is_receive(actions[i - 1].kind) ||
         sched::is_collective(actions[i - 1].kind);
}

// One stage of the rank: its module and input, and its optimizer: AdamW over the module, or
// under ZeRO the first replica's ZeroStage, whose full parameters are gathered locally (every
// replica's slice holds this one's values; the step's work does not depend on them).
struct ReplayStage {
  ReplayStage(const Scenario& scenario, const StageCost& cost, const TrainingData& data,
              const nn::TensorParallelGroup& tp, torch::Device device,
              const nn::ExpertParallelGroup& ep, const nn::ContextParallelGroup& cp)
      : run(scenario, cost, data, tp, device, ep, cp) {
    const torch::optim::AdamWOptions options =
        torch::optim::AdamWOptions(scenario.training.lr).weight_decay(0.1);
    const LayoutSpec& l = scenario.layout;
    if (l.zero == 0) {
      optimizer = std::make_unique<FusedAdamW>(run.module->parameters(), options);
      return;
    }
    zero = std::make_unique<ZeroStage>(*run.module, l.zero, l.dp, 0, options);
    gather_locally();
  }
  // Under ZeRO 3 only: ZeRO 1 and 2 keep the full parameters, and the shard is a slice of them.
  void gather_locally() {
    if (zero->gathered()) return;
    torch::NoGradGuard no_grad;
    zero->allocate_parameters();
    const int64_t n = zero->shard_elements();
    zero->full_parameters().view({-1, n}).copy_(zero->parameter_shard().view({1, n}));
  }
  // ALLREDUCE's work on the rank beside the collective, as Executor::dp_sync runs it: the
  // gradients packed into one buffer and their average written back; with `experts_apart`
  // (expert parallelism) the dense ones so, then the experts' packed and divided apart.
  void sync_gradients(int replicas, bool experts_apart) {
    const nn::StageModule& m = *run.module;
    const std::vector<torch::Tensor> gradients =
        sync_tensors(experts_apart ? m.expert_parameters(false) : m.parameters(), false);
    write_average(flatten(gradients), replicas, gradients);
    if (!experts_apart) return;
    const std::vector<torch::Tensor> experts = sync_tensors(m.expert_parameters(), false);
    copy_slices(flatten(experts) / replicas, experts);
  }
  // REDUCE_GRAD's work on the rank after the reduce-scatter (replica 0's shard stands in for the
  // reduced one); OPTIM does it first where the schedule has no REDUCE_GRAD.
  void keep_gradient_shard() {
    zero->prepare_gradients();
    zero->keep_gradient_shard(zero->full_gradients().narrow(0, 0, zero->shard_elements()));
  }
  // True between keep_gradient_shard and the ZeRO step, which drops the shard's gradient.
  bool shard_kept() const { return zero->parameter_shard().grad().defined(); }
  // OPTIM as training runs it: AdamW and zero_grad, or the ZeRO step of the kept shard.
  void step() {
    if (!zero) {
      optimizer->step();
      optimizer->zero_grad(/*set_to_none=*/false);  // as the executor's
      return;
    }
    zero->step();  // the full parameters keep their values: UNSHARD's work, not OPTIM's
  }
  // Before a backward: the gradient buffer that ZeRO 2 and 3 release at REDUCE_GRAD.
  void prepare_gradients() {
    if (zero) zero->prepare_gradients();
  }
  StageRun run;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<ZeroStage> zero;
};

// True for the actions replayed: compute, OPTIM, and the local work of a gradient
// synchronisation without buckets (with buckets it runs inside the last backward).
bool replayed(const Action& a, bool buckets) {
  if (sched::is_compute(a.kind) || a.kind == ActionKind::OPTIM) return true;
  return !buckets && (a.kind == ActionKind::ALLREDUCE || a.kind == ActionKind::REDUCE_GRAD);
}

}  // namespace

ActionSeconds replay_compute(const Scenario& scenario, const CostModel& cost,
                             const sched::Schedule& schedule, int rank, const TrainingData& data,
                             int warmup, int steps, const nn::TensorParallelGroup& tp,
                             CollectiveTimes* collectives, torch::Device device,
                             const nn::ExpertParallelGroup& ep,
                             const nn::ContextParallelGroup& cp) {
  const sched::ActionList& actions = schedule.ranks.at(rank);
  const sched::Layout& layout = schedule.layout;
  const bool buckets = scenario.layout.gradient_buckets();
  std::map<int, ReplayStage> stages;
  for (const Action& a : actions)
    if (replayed(a, buckets))
      stages.try_emplace(a.stage, scenario, cost.stage(a.stage), data, tp, device, ep, cp);
  ActionSeconds seconds;
  for (int step = -warmup; step < steps; ++step) {
    std::map<std::pair<int, int>, torch::Tensor> outputs;
    std::map<std::pair<int, int>, nn::WeightGradStash> stashes;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      const Action& a = actions[i];
      if (!replayed(a, buckets)) continue;
      if (follows_wait(actions, i)) evict_caches();
      ReplayStage& replay = stages.at(a.stage);
      if (a.kind == ActionKind::OPTIM && replay.zero && !replay.shard_kept())
        replay.keep_gradient_shard();
      StageRun& run = replay.run;
      const std::pair<int, int> key{a.stage, a.microbatch};
      const double collectives_start = tp.collective_seconds();
      const double helper_start = tp.collective_helper_cpu_seconds();
      const double elapsed = device_seconds(device, [&] {
        switch (a.kind) {
          case ActionKind::F:
            if (run.stage.has_embedding || run.stage.has_head)
              // Member m of an expert-parallel group reads data-parallel replica m's tokens, as
              // in training (the group folds over the replicas), so that it routes its own.
              run.load(data.batch(std::max(step, 0), ep.size > 1 ? ep.rank : 0, a.microbatch,
                                  layout.dp, layout.microbatches, scenario.layout.micro_batch_size,
                                  scenario.training.seed));
            outputs[key] = run.forward();
            break;
          case ActionKind::B:
            replay.prepare_gradients();
            run.backward(take(outputs, key, a));
            break;
          case ActionKind::I: {
            replay.prepare_gradients();
            nn::StashGuard guard(run.module->stash_slot(), &stashes[key]);
            run.backward(take(outputs, key, a));
            break;
          }
          case ActionKind::W:
            take(stashes, key, a).apply();
            break;
          case ActionKind::ALLREDUCE:
            replay.sync_gradients(layout.dp, scenario.layout.ep > 1);
            break;
          case ActionKind::REDUCE_GRAD:
            replay.keep_gradient_shard();
            break;
          default:  // OPTIM
            replay.step();
        }
      });
      if (step < 0) continue;
      seconds[{a.stage, a.kind}].push_back(elapsed);
      if (!collectives) continue;
      collectives->seconds[{a.stage, a.kind}].push_back(tp.collective_seconds() -
                                                        collectives_start);
      collectives->helper_cpu[{a.stage, a.kind}].push_back(tp.collective_helper_cpu_seconds() -
                                                           helper_start);
    }
  }
  return seconds;
}

}  // namespace dtwin::rt
