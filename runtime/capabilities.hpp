// What this build of the runtime can execute, checked before any rank starts.
#pragma once

#include "models/scenario.hpp"

namespace dtwin::rt {

/// Throws UserError (bad input, exit 2) naming the scenario key when the scenario
/// asks for something the runtime cannot run rather than silently running something else:
/// runtime.device cuda and runtime.backend nccl (execution on CUDA devices is not implemented
/// yet, even in CUDA builds), model.family gpt2 (simulated only) or training.precision bf16 (the
/// runtime trains in fp32 for now), and the layouts simulated only: tp_comm_overlap and
/// offload.
void check_runtime_supports(const Scenario& scenario);

}  // namespace dtwin::rt
