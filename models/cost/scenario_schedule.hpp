// The bridge from a scenario to the validated schedule that every command executes.
#pragma once

#include "models/spec/scenario.hpp"
#include "schedules/generators.hpp"
#include "schedules/schedule.hpp"

namespace dtwin {

class CostModel;

/// The schedule layout of a scenario (dp, pp, virtual stages, microbatches, DP sync, ZeRO stage,
/// its schedule's stage placement). Its dp is the scenario's dp·cp: the cp GPUs of a replica run
/// the same actions on their parts of each sequence and reduce gradients together, so the
/// schedule's replica index is dp_index·cp + cp_index (LayoutSpec's GPU order).
sched::Layout schedule_layout(const Scenario& scenario);

/// The pass times the zero-bubble heuristics (ZB-1p, ZB-2p) order passes by: F, I (its
/// tensor-parallel collectives included) and W of the stage whose F + I + W is largest, in
/// seconds from the kernel model (KernelSeconds, host stall included) or FLOPs at
/// cluster.device's peak · efficiency, and comm the intra-node transfer of one activation
/// (latency + CostModel::boundary_bytes / bandwidth); as Qi et al. 2024 (§4) schedule with
/// profiled times. Unit times (sched::PassTimes{}) when the model gives no positive time.
sched::PassTimes zero_bubble_pass_times(const Scenario& scenario);
/// The same from `cost`, the scenario's CostModel, when the caller has built it already.
sched::PassTimes zero_bubble_pass_times(const Scenario& scenario, const CostModel& cost);

/// The pass times the scenario's schedule kind is generated with: zero_bubble_pass_times for
/// ZB-1p and ZB-2p, unit times (which the other generators ignore) otherwise.
sched::PassTimes schedule_pass_times(const Scenario& scenario);
/// The same from `cost`, the scenario's CostModel.
sched::PassTimes schedule_pass_times(const Scenario& scenario, const CostModel& cost);

/// Generates the scenario's schedule (with schedule_pass_times, so that the
/// simulator and the runtime execute one schedule), validates it as compute-only, lowers it unless
/// `compute_only`, and validates the result. Throws sched::ScheduleError if a generator or pass
/// breaks a rule, std::invalid_argument (a bug: the loader checks layouts) if the layout does not
/// suit the schedule or asks for ZeRO with a dp_sync other than allreduce.
sched::Schedule build_schedule(const Scenario& scenario, bool compute_only = false);

}  // namespace dtwin
