#include "models/cost/scenario_schedule.hpp"

#include "models/cost/cost_model.hpp"
#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"
#include "schedules/validate.hpp"

namespace dtwin {

sched::Layout schedule_layout(const Scenario& scenario) {
  const LayoutSpec& spec = scenario.layout;
  // The schedule's data-parallel index is dp_index·cp + cp_index: a shard group of dp_shard
  // replicas is dp_shard·cp consecutive indices.
  return {spec.dp_cp(),
          spec.pp,
          spec.virtual_stages,
          spec.microbatches,
          spec.dp_sync,
          spec.zero,
          spec.tp,
          spec.zero3_gather,
          sched::requirements(spec.schedule).placement,
          spec.hybrid_shard() ? spec.zero_group() : 0};
}

sched::PassTimes zero_bubble_pass_times(const Scenario& scenario) {
  return zero_bubble_pass_times(scenario, CostModel(scenario));
}

sched::PassTimes zero_bubble_pass_times(const Scenario& scenario, const CostModel& cost) {
  const DeviceSpec& device = scenario.cluster.device;
  const double rate = device.peak_flops * device.efficiency;
  const auto seconds = [rate](double flops) { return rate > 0 ? flops / rate : flops; };
  sched::PassTimes slowest{0, 0, 0, 0};
  bool in_seconds = rate > 0;
  for (const StageCost& s : cost.stages()) {
    in_seconds = in_seconds || s.kernel.has_value();
    sched::PassTimes t;
    if (s.kernel) {
      t = {s.kernel->forward, s.kernel->input_backward, s.kernel->weight_backward, 0};
    } else {
      t = {seconds(s.forward_flops), seconds(s.input_backward_flops),
           seconds(s.weight_backward_flops), 0};
    }
    t.f += s.tp_forward_s;
    t.i += s.tp_input_backward_s;
    if (t.f + t.i + t.w > slowest.f + slowest.i + slowest.w) slowest = t;
  }
  if (slowest.f <= 0 || slowest.i <= 0 || slowest.w <= 0) return {};
  const LinkSpec& link = scenario.cluster.intra_node;
  if (in_seconds && link.bandwidth > 0)
    slowest.comm = link.latency + cost.boundary_bytes() / link.bandwidth;
  return slowest;
}

namespace {

// Whether the generator of `kind` orders passes by their times (ZB-1p, ZB-2p).
bool timed(sched::ScheduleKind kind) {
  return kind == sched::ScheduleKind::Zb1p || kind == sched::ScheduleKind::Zb2p;
}

}  // namespace

sched::PassTimes schedule_pass_times(const Scenario& scenario) {
  return timed(scenario.layout.schedule) ? zero_bubble_pass_times(scenario) : sched::PassTimes{};
}

sched::PassTimes schedule_pass_times(const Scenario& scenario, const CostModel& cost) {
  return timed(scenario.layout.schedule) ? zero_bubble_pass_times(scenario, cost)
                                         : sched::PassTimes{};
}

sched::Schedule build_schedule(const Scenario& scenario, bool compute_only) {
  sched::Schedule schedule = sched::generate(scenario.layout.schedule, schedule_layout(scenario),
                                             schedule_pass_times(scenario));
  sched::validate(schedule, sched::Expect::ComputeOnly);
  if (compute_only) return schedule;
  schedule = sched::lower(schedule);
  sched::validate(schedule, sched::Expect::Lowered);
  return schedule;
}

}  // namespace dtwin
