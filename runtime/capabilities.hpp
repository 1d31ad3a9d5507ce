// What this build of the runtime can execute, checked before any rank starts.
#pragma once

#include <vector>

#include "models/spec/scenario.hpp"
#include "models/spec/validate.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::rt {

/// What the runtime cannot execute in `scenario`, each naming its key (the layout and model
/// checks of check_runtime_supports, without the visible-GPU check); with `schedule` (the
/// scenario's, lowered) also NCCL's channel order. Empty when the runtime executes it.
std::vector<Violation> runtime_violations(const Scenario& scenario,
                                          const sched::Schedule* schedule = nullptr);

/// Throws UserError (bad input, exit 2) naming the scenario key when the scenario
/// asks for something the runtime cannot run rather than silently running something else:
/// runtime.device cuda in a build without CUDA or on a host without a visible GPU,
/// runtime.backend nccl on the CPU or with ranks sharing a device (cluster.ranks_per_device > 1),
/// model.family gpt2 and model.n_kv_heads not a multiple of layout.tp (simulated only), model.moe
/// with layout.ep or layout.tp > 1,
/// training.grad_precision bf16 (gradients are reduced in
/// fp32), and the layouts simulated only: tp_comm_overlap and offload.
void check_runtime_supports(const Scenario& scenario);

/// The same, and for runtime.backend nccl also that `schedule` (the scenario's, lowered)
/// receives each pipeline channel's messages in the order they are sent
/// (sched::out_of_order_transfer): NCCL matches them in posting order, not by tag. Throws
/// UserError naming runtime.backend and the first message out of order.
void check_runtime_supports(const Scenario& scenario, const sched::Schedule& schedule);

}  // namespace dtwin::rt
