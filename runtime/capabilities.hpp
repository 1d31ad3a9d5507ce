// What this build of the runtime can execute, checked before any rank starts.
#pragma once

#include "models/scenario.hpp"

namespace dtwin::rt {

/// Throws std::invalid_argument (bad input, exit 2) naming the scenario key when the scenario
/// asks for something this build cannot run rather than silently running something else:
/// runtime.device cuda without a CUDA LibTorch, runtime.backend nccl (this build has Gloo
/// only), model.family gpt2 (simulated only) or training.precision bf16 (the runtime trains in
/// fp32 for now).
void check_runtime_supports(const Scenario& scenario);

}  // namespace dtwin::rt
