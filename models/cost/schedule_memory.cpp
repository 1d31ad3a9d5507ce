#include "models/cost/schedule_memory.hpp"

#include <algorithm>
#include <set>

namespace dtwin {

double model_state_bytes(const sched::Schedule& schedule, int rank, const CostModel& cost) {
  std::set<int> stages;
  for (const sched::Action& a : schedule.ranks.at(rank))
    if (sched::is_compute(a.kind)) stages.insert(a.stage);
  double bytes = 0;
  for (int stage : stages) bytes += cost.static_memory_bytes(stage);
  return bytes;
}

std::vector<ActionMemory> action_memory_bytes(const sched::Schedule& schedule, int rank,
                                              const CostModel& cost) {
  using sched::ActionKind;
  const bool zero3 = schedule.layout.zero == 3;  // ZeRO-1/2 keep whole weights resident
  const bool sharded_gradients = schedule.layout.zero >= 2;
  std::set<int> accumulating;  // stages holding whole gradients (ZeRO 2 and 3)
  double held = model_state_bytes(schedule, rank, cost);
  std::vector<ActionMemory> series;
  for (const sched::Action& a : schedule.ranks.at(rank)) {
    if (zero3 && a.kind == ActionKind::UNSHARD) held += cost.gathered_weight_bytes(a.stage);
    if (zero3 && a.kind == ActionKind::RESHARD) held -= cost.gathered_weight_bytes(a.stage);
    if (a.kind == ActionKind::REDUCE_GRAD && accumulating.erase(a.stage))
      held -= cost.gathered_gradient_bytes(a.stage);
    if (sharded_gradients && (a.kind == ActionKind::B || a.kind == ActionKind::I) &&
        accumulating.insert(a.stage).second)
      held += cost.gathered_gradient_bytes(a.stage);
    ActionMemory memory{held, held};
    if (a.kind == ActionKind::OPTIM) memory.peak += cost.stage(a.stage).optimizer_workspace_bytes;
    if (sched::is_compute(a.kind)) {
      const StageCost& stage = cost.stage(a.stage);
      if (a.kind == ActionKind::B || a.kind == ActionKind::I)
        memory.peak += stage.backward_workspace_bytes;
      if (a.kind == ActionKind::F) held += stage.activation_bytes;
      if (a.kind == ActionKind::B) held -= stage.activation_bytes;
      if (a.kind == ActionKind::I) held -= stage.input_backward_freed_bytes;
      if (a.kind == ActionKind::W)
        held -= stage.activation_bytes - stage.input_backward_freed_bytes;
    }
    memory.after = held;
    memory.peak = std::max(memory.peak, held);
    series.push_back(memory);
  }
  return series;
}

double peak_memory_bytes(const sched::Schedule& schedule, int rank, const CostModel& cost) {
  double peak = model_state_bytes(schedule, rank, cost);
  for (const ActionMemory& memory : action_memory_bytes(schedule, rank, cost))
    peak = std::max(peak, memory.peak);
  return peak;
}

}  // namespace dtwin
