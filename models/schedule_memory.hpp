// Memory a rank holds over a step, as its schedule dictates.
#pragma once

#include "models/cost_model.hpp"
#include "schedules/schedule.hpp"

namespace dtwin {

/// Peak bytes of `rank`: weights, gradients and optimizer state of its stages
/// (CostModel::static_memory_bytes) plus the most activations held at once while walking its
/// list: F of (stage, microbatch) takes the stage's activation_bytes, B — or W when the backward
/// is split into I and W — releases them, and B or I holds the stage's
/// backward_workspace_bytes more while it runs. GPipe thus holds m microbatches, 1F1B at most
/// pp-rank.
/// With ZeRO-3 the weights gathered from UNSHARD to RESHARD add CostModel::gathered_weight_bytes.
double peak_memory_bytes(const sched::Schedule& schedule, int rank, const CostModel& cost);

}  // namespace dtwin
