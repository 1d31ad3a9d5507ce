#include "runtime/capabilities.hpp"

#include "schedules/user_error.hpp"

namespace dtwin::rt {

void check_runtime_supports(const Scenario& scenario) {
  const std::string where = scenario.source + ": ";
  if (scenario.runtime.device != "cpu")
    throw UserError(where + "runtime.device: expected cpu (the runtime executes " +
                    "schedules on the CPU only for now), got '" + scenario.runtime.device + "'");
  if (scenario.runtime.backend != "gloo")
    throw UserError(where + "runtime.backend: expected gloo (NCCL needs CUDA " +
                    "tensors, and the runtime executes on the CPU only for now), " + "got '" +
                    scenario.runtime.backend + "'");
  if (scenario.model.family != "llama")
    throw UserError(where + "model.family: expected llama (the runtime builds LLaMA " +
                    "stages; gpt2 is simulated only), got '" + scenario.model.family + "'");
  if (scenario.training.precision != "fp32")
    throw UserError(where + "training.precision: expected fp32 (the runtime trains " +
                    "in fp32; bf16 is simulated only), got '" + scenario.training.precision + "'");
}

}  // namespace dtwin::rt
