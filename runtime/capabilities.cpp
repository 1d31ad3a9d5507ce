#include "runtime/capabilities.hpp"

#include "base/user_error.hpp"
#include "runtime/rank_device.hpp"
#include "schedules/schedule.hpp"
#include "schedules/transfer.hpp"

namespace dtwin::rt {

void check_runtime_supports(const Scenario& scenario) {
  const std::string where = scenario.source + ": ";
  struct Requirement {
    bool met;
    const char* key;
    std::string got;
    const char* expected;
  };
  const RuntimeSpec& r = scenario.runtime;
  const ModelSpec& m = scenario.model;
  const TrainingSpec& t = scenario.training;
  const LayoutSpec& l = scenario.layout;
  const Requirement requirements[] = {
      {r.backend == Backend::Gloo || r.device == RuntimeDevice::Cuda, "runtime.backend",
       std::string(kBackendNames.name(r.backend)), "gloo on runtime.device cpu (NCCL needs cuda)"},
      {r.backend == Backend::Gloo || scenario.cluster.ranks_per_device == 1, "runtime.backend",
       std::string(kBackendNames.name(r.backend)),
       "gloo when ranks share a device (cluster.ranks_per_device > 1): NCCL runs one rank per "
       "GPU"},
      {m.family == ModelFamily::Llama, "model.family",
       std::string(kModelFamilyNames.name(m.family)),
       "llama (the runtime builds LLaMA stages; gpt2 is simulated only)"},
      {t.grad_precision == Precision::Fp32, "training.grad_precision",
       std::string(kPrecisionNames.name(t.grad_precision)),
       "fp32 (the runtime reduces fp32 gradients; reducing them in bf16 is simulated only)"},
      {!l.tp_comm_overlap, "layout.tp_comm_overlap", "true",
       "false (overlapping the tensor-parallel collectives is simulated only)"},
      {l.offload == Offload::None, "layout.offload", std::string(kOffloadNames.name(l.offload)),
       "none (offloading is simulated only)"},
  };
  for (const Requirement& q : requirements)
    if (!q.met)
      throw UserError(where + q.key + ": expected " + q.expected + ", got '" + q.got + "'");
  if (r.device == RuntimeDevice::Cuda) {
    try {
      gpu_of_local_rank(r.backend, 0, 1, visible_gpus());
    } catch (const UserError& error) {
      throw UserError(where + error.what());
    }
  }
}

void check_runtime_supports(const Scenario& scenario, const sched::Schedule& schedule) {
  if (scenario.runtime.backend == Backend::Nccl)
    if (const auto disorder = sched::out_of_order_transfer(schedule))
      throw UserError(scenario.source +
                      ": runtime.backend: expected gloo for this schedule, got 'nccl': NCCL "
                      "matches a pair's pipeline messages in the order they are posted, and " +
                      *disorder);
  check_runtime_supports(scenario);
}

}  // namespace dtwin::rt
