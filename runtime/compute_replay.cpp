#include "runtime/compute_replay.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "models/split_linear.hpp"
#include "runtime/clock.hpp"
#include "runtime/stage_run.hpp"

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

// Writes twice the last-level cache's bytes, as the other ranks computing on the machine do
// while this one waits: what this rank held in the caches is gone.
void evict_caches() {
  static std::vector<char> buffer(2 * last_level_cache_bytes());
  static char round = 0;
  std::memset(buffer.data(), ++round, buffer.size());
}

// True where the rank waits in training before `actions[i]`, and other ranks compute meanwhile:
// at the step's start, and after a receive or a collective.
bool follows_wait(const sched::ActionList& actions, std::size_t i) {
  return i == 0 || sched::is_receive(actions[i - 1].kind) ||
         sched::is_collective(actions[i - 1].kind);
}

// One stage of the rank: its module and input, and its optimizer.
struct ReplayStage {
  ReplayStage(const Scenario& scenario, const StageCost& cost, const TokenDataset& data)
      : run(scenario, cost, data),
        optimizer(run.module->parameters(),
                  torch::optim::AdamWOptions(scenario.training.lr).weight_decay(0.1)) {}
  StageRun run;
  torch::optim::AdamW optimizer;
};

}  // namespace

ActionSeconds replay_compute(const Scenario& scenario, const CostModel& cost,
                             const sched::Schedule& schedule, int rank, const TokenDataset& data,
                             int warmup, int steps) {
  const sched::ActionList& actions = schedule.ranks.at(rank);
  const sched::Layout& layout = schedule.layout;
  std::map<int, ReplayStage> stages;
  for (const Action& a : actions)
    if (sched::is_compute(a.kind) || a.kind == ActionKind::OPTIM)
      stages.try_emplace(a.stage, scenario, cost.stage(a.stage), data);
  ActionSeconds seconds;
  for (int step = -warmup; step < steps; ++step) {
    std::map<std::pair<int, int>, torch::Tensor> outputs;
    std::map<std::pair<int, int>, nn::WeightGradStash> stashes;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      const Action& a = actions[i];
      if (!sched::is_compute(a.kind) && a.kind != ActionKind::OPTIM) continue;
      if (follows_wait(actions, i)) evict_caches();
      StageRun& run = stages.at(a.stage).run;
      const std::pair<int, int> key{a.stage, a.microbatch};
      const double start = wall_seconds();
      switch (a.kind) {
        case ActionKind::F:
          if (run.stage.has_embedding || run.stage.has_head)
            run.batch =
                data.batch(std::max(step, 0), 0, a.microbatch, layout.dp, layout.microbatches,
                           scenario.layout.micro_batch_size, scenario.training.seed);
          if (run.stage.has_embedding) run.input = run.batch.inputs;
          outputs[key] = run.forward();
          break;
        case ActionKind::B:
          run.backward(take(outputs, key, a));
          break;
        case ActionKind::I: {
          nn::StashGuard guard(&stashes[key]);
          run.backward(take(outputs, key, a));
          break;
        }
        case ActionKind::W:
          take(stashes, key, a).apply();
          break;
        default: {  // OPTIM
          torch::optim::AdamW& optimizer = stages.at(a.stage).optimizer;
          optimizer.step();
          optimizer.zero_grad();
        }
      }
      const double elapsed = wall_seconds() - start;
      if (step >= 0) seconds[{a.stage, a.kind}].push_back(elapsed);
    }
  }
  return seconds;
}

}  // namespace dtwin::rt
