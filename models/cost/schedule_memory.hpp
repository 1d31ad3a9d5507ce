// Memory a rank holds over a step, as its schedule dictates.
#pragma once

#include <vector>

#include "models/cost/cost_model.hpp"
#include "schedules/schedule.hpp"

namespace dtwin {

/// Bytes a rank holds while one action of its list runs and once it has ended.
struct ActionMemory {
  double peak = 0;   ///< the most bytes held during the action (a backward's workspace included)
  double after = 0;  ///< bytes held when it ends
};

/// One ActionMemory per action of `rank`'s list, in its order: weights, gradients and optimizer
/// state of its stages (CostModel::static_memory_bytes) plus what the walk below holds then.
/// Walking the list: F of (stage, microbatch) takes the stage's activation_bytes and B releases
/// them; a split backward's I releases input_backward_freed_bytes and W the rest. B or I holds the
/// stage's backward_workspace_bytes more while it runs, OPTIM its optimizer_workspace_bytes. GPipe
/// thus holds m microbatches, 1F1B at most pp-rank. The gradients stay allocated between steps, as
/// Megatron-LM's gradient buffers and the executor's zero_grad(set_to_none = false) keep them.
/// With ZeRO-3 the weights gathered from UNSHARD to RESHARD add CostModel::gathered_weight_bytes;
/// with ZeRO 2 and 3 the whole gradients accumulated from a stage's first backward to its
/// REDUCE_GRAD add CostModel::gathered_gradient_bytes (the reduce-scatter comes after the last
/// backward, as in torch.distributed.pipelining with FSDP). Pipeline messages are not counted:
/// Megatron-LM frees a sent output (deallocate_output_tensor); dtwin's executor keeps it until
/// its backward and a sent message until a receive proves it delivered
/// (sched::send_release_points), CostModel::boundary_bytes each.
std::vector<ActionMemory> action_memory_bytes(const sched::Schedule& schedule, int rank,
                                              const CostModel& cost);

/// Peak bytes of `rank`: the most of action_memory_bytes's peaks, at least its model states.
double peak_memory_bytes(const sched::Schedule& schedule, int rank, const CostModel& cost);

/// Bytes of model states `rank` holds between steps: CostModel::static_memory_bytes summed over
/// the stages its list computes (weights, gradients and AdamW state, sharded by layout.zero).
double model_state_bytes(const sched::Schedule& schedule, int rank, const CostModel& cost);

}  // namespace dtwin
