// A closed-form estimate of one training step of a scenario: its time and each pipeline rank's
// peak memory, without building the schedule or running the simulator. The planner (`dtwin
// plan`) ranks thousands of layouts with it and simulates only the best; both figures sit in its
// table, so the estimate's error is visible.
#pragma once

#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/spec/scenario.hpp"
#include "schedules/generators.hpp"
#include "schedules/schedule.hpp"

namespace dtwin {

struct StepEstimate {
  double step_s = 0;               ///< seconds of one step
  double pipeline_s = 0;           ///< the pipeline's compute, bubble included, seconds
  double bubble_s = 0;             ///< of pipeline_s, the warm-up and cool-down, seconds
  double exposed_comm_s = 0;       ///< p2p, data-parallel and offload seconds not under compute
  double optimizer_s = 0;          ///< the optimizer step, seconds
  std::vector<double> peak_bytes;  ///< per pipeline rank: weights, optimizer state, activations
};

/// Estimates a step of `scenario` from `cost`, for its layout's schedule:
///  - a (stage, microbatch) takes f = F + TP collectives and b = B (= I + W) + TP collectives,
///    seconds from the kernel model (cost.stage(s).kernel) or FLOPs / (peak · efficiency) as
///    the simulator's platform gives a rank its device's cores (sim/platform.hpp);
///  - pipeline time = m · (F_r + B_r) + bubble, with F_r, B_r the sums over rank r's stages and
///    the slowest rank taken; bubble = (pp − 1)(F_r + B_r)/v for GPipe, 1F1B and interleaved
///    1F1B with v virtual stages (Narayanan et al. 2021 §2.2), a third of the 1F1B bubble for
///    ZB-H1, ZB-1p and ZB-2p (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", §3: their
///    unit-time dry runs, which do not tell them apart); at least m · (F_r + B_r)
///    times the oversubscription of a device's cores when its ranks share them;
///  - p2p: the 2(pp·v − 1) boundary transfers of the warm-up and cool-down, latency + bytes / bw;
///  - data-parallel: a ring all-reduce (or reduce-scatter + all-gather with ZeRO; 1.5 times that
///    for ZeRO-3) of the rank's gradients over the intra-node link when the dp group fits a
///    node, else the inter-node one (NCCL's time for each collective where NCCL runs them,
///    models/cost/nccl_model.hpp); with overlap_grad_reduce only the last bucket is exposed;
///    ZeRO-3 with zero3_gather layer: per microbatch and stage, the first layer's share of the
///    gathers before F and B and of the reduce-scatter after B, as the simulator exposes them,
///    summed over the rank's stages;
///  - the optimizer step of the rank's stages, plus offload transfers.
/// Peak memory of pipeline rank r: peak_memory_bytes of `proxy`'s rank r of replica 0, the walk
/// of the layout's lowered schedule (memory_proxy).
StepEstimate estimate_step(const Scenario& scenario, const CostModel& cost,
                           const sched::Schedule& proxy);

/// The same with the proxy built here (ZB-1p and ZB-2p with zero_bubble_pass_times, as
/// build_schedule orders them).
StepEstimate estimate_step(const Scenario& scenario, const CostModel& cost);

/// The schedule whose walk gives a layout's memory: its generator's pipeline lowered with
/// min(dp, 2) replicas (two are enough for ZeRO's gathers and releases), which depends only on
/// the schedule kind, pp, virtual stages, microbatches, dp_sync and ZeRO stage, and for ZB-1p and
/// ZB-2p on the pass `times` that order them; callers that estimate many layouts may share it
/// among those with the same (the planner does). Throws std::invalid_argument for a layout the
/// generator cannot serve.
sched::Schedule memory_proxy(const LayoutSpec& layout, const sched::PassTimes& times = {});

}  // namespace dtwin
