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

double peak_memory_bytes(const sched::Schedule& schedule, int rank, const CostModel& cost) {
  using sched::ActionKind;
  const bool zero3 = schedule.layout.zero == 3;  // ZeRO-1/2 keep whole weights resident
  const bool sharded_gradients = schedule.layout.zero >= 2;
  std::set<int> accumulating;  // stages holding whole gradients (ZeRO 2 and 3)
  double held = 0, peak = 0;
  for (const sched::Action& a : schedule.ranks.at(rank)) {
    if (zero3 && a.kind == ActionKind::UNSHARD) held += cost.gathered_weight_bytes(a.stage);
    if (zero3 && a.kind == ActionKind::RESHARD) held -= cost.gathered_weight_bytes(a.stage);
    if (a.kind == ActionKind::REDUCE_GRAD && accumulating.erase(a.stage))
      held -= cost.gathered_gradient_bytes(a.stage);
    if (sharded_gradients && (a.kind == ActionKind::B || a.kind == ActionKind::I) &&
        accumulating.insert(a.stage).second)
      held += cost.gathered_gradient_bytes(a.stage);
    peak = std::max(peak, held);
    if (a.kind == ActionKind::OPTIM)
      peak = std::max(peak, held + cost.stage(a.stage).optimizer_workspace_bytes);
    if (!sched::is_compute(a.kind)) continue;
    const StageCost& stage = cost.stage(a.stage);
    if (a.kind == ActionKind::B || a.kind == ActionKind::I)
      peak = std::max(peak, held + stage.backward_workspace_bytes);
    if (a.kind == ActionKind::F) held += stage.activation_bytes;
    if (a.kind == ActionKind::B) held -= stage.activation_bytes;
    if (a.kind == ActionKind::I) held -= stage.input_backward_freed_bytes;
    if (a.kind == ActionKind::W) held -= stage.activation_bytes - stage.input_backward_freed_bytes;
    peak = std::max(peak, held);
  }
  return model_state_bytes(schedule, rank, cost) + peak;
}

}  // namespace dtwin
