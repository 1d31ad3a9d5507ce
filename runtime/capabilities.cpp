#include "runtime/capabilities.hpp"

#include <torch/cuda.h>

#include <stdexcept>

namespace dtwin::rt {

void check_runtime_supports(const Scenario& scenario) {
  const std::string where = scenario.source + ": ";
  if (scenario.runtime.device == "cuda" && !torch::cuda::is_available())
    throw std::invalid_argument(where +
                                "runtime.device: expected cpu, got 'cuda' (this LibTorch has no "
                                "CUDA device available)");
  if (scenario.runtime.backend != "gloo")
    throw std::invalid_argument(where + "runtime.backend: expected gloo (this build has no " +
                                "NCCL process group), got '" + scenario.runtime.backend + "'");
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
