#include "models/spec/scenario_schedule.hpp"

#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"
#include "schedules/validate.hpp"

namespace dtwin {

sched::Layout schedule_layout(const Scenario& scenario) {
  const LayoutSpec& spec = scenario.layout;
  return {spec.dp,   spec.pp, spec.virtual_stages, spec.microbatches, spec.dp_sync,
          spec.zero, spec.tp};
}

sched::Schedule build_schedule(const Scenario& scenario, bool compute_only) {
  sched::Schedule schedule = sched::generate(scenario.layout.schedule, schedule_layout(scenario));
  sched::validate(schedule, sched::Expect::ComputeOnly);
  if (compute_only) return schedule;
  schedule = sched::lower(schedule);
  sched::validate(schedule, sched::Expect::Lowered);
  return schedule;
}

}  // namespace dtwin
