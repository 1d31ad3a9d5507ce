#include "runtime/capabilities.hpp"

#include <stdexcept>

namespace dtwin::rt {

void check_runtime_supports(const Scenario& scenario) {
  const std::string where = scenario.source + ": ";
  if (scenario.runtime.device != "cpu")
    throw std::invalid_argument(where + "runtime.device: expected cpu (the runtime executes " +
                                "schedules on the CPU only for now), got '" +
                                scenario.runtime.device + "'");
  if (scenario.runtime.backend != "gloo")
    throw std::invalid_argument(where + "runtime.backend: expected gloo (NCCL needs CUDA " +
                                "tensors, and the runtime executes on the CPU only for now), " +
                                "got '" + scenario.runtime.backend + "'");
  if (scenario.model.family != "llama")
    throw std::invalid_argument(where + "model.family: expected llama (the runtime builds LLaMA " +
                                "stages; gpt2 is simulated only), got '" + scenario.model.family +
                                "'");
  if (scenario.training.precision != "fp32")
    throw std::invalid_argument(where + "training.precision: expected fp32 (the runtime trains " +
                                "in fp32; bf16 is simulated only), got '" +
                                scenario.training.precision + "'");
}

}  // namespace dtwin::rt
