#include "models/schedule_memory.hpp"

#include <algorithm>
#include <set>

namespace dtwin {

double peak_memory_bytes(const sched::Schedule& schedule, int rank, const CostModel& cost) {
  using sched::ActionKind;
  std::set<int> stages;
  double held = 0, peak = 0;
  for (const sched::Action& a : schedule.ranks.at(rank)) {
    const bool zero3 = schedule.layout.zero == 3;  // ZeRO-1/2 keep whole weights resident
    if (zero3 && a.kind == ActionKind::UNSHARD) held += cost.gathered_weight_bytes(a.stage);
    if (zero3 && a.kind == ActionKind::RESHARD) held -= cost.gathered_weight_bytes(a.stage);
    peak = std::max(peak, held);
    if (!sched::is_compute(a.kind)) continue;
    stages.insert(a.stage);
    const double bytes = cost.stage(a.stage).activation_bytes;
    if (a.kind == ActionKind::B || a.kind == ActionKind::I)
      peak = std::max(peak, held + cost.stage(a.stage).backward_workspace_bytes);
    if (a.kind == ActionKind::F) held += bytes;
    if (a.kind == ActionKind::B || a.kind == ActionKind::W) held -= bytes;
    peak = std::max(peak, held);
  }
  double fixed = 0;
  for (int stage : stages) fixed += cost.static_memory_bytes(stage);
  return fixed + peak;
}

}  // namespace dtwin
