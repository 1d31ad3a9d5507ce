#include "runtime/capabilities.hpp"

#include <cstdint>

#include "base/user_error.hpp"
#include "runtime/rank_device.hpp"
#include "schedules/schedule.hpp"
#include "schedules/transfer.hpp"

namespace dtwin::rt {

std::vector<Violation> runtime_violations(const Scenario& scenario,
                                          const sched::Schedule* schedule) {
  struct Requirement {
    bool met;
    const char* key;
    const char* expected;
  };
  const RuntimeSpec& r = scenario.runtime;
  const ModelSpec& m = scenario.model;
  const TrainingSpec& t = scenario.training;
  const LayoutSpec& l = scenario.layout;
  // _scaled_mm's fp8 tensor cores take GEMMs whose every dimension is a multiple of 16: the
  // layers' widths on a tensor-parallel member and the tokens of a microbatch.
  const std::int64_t head_dim = m.n_heads > 0 ? m.d_model / m.n_heads : 0;
  const auto by16 = [](std::int64_t n) { return n % 16 == 0; };
  const bool fp8_shapes = t.precision != Precision::Fp8 || r.device != RuntimeDevice::Cuda ||
                          (by16(m.d_model) && by16(m.d_model / l.tp) && by16(m.ffn_hidden / l.tp) &&
                           by16(m.kv_heads() * head_dim / l.tp) &&
                           by16(static_cast<std::int64_t>(l.micro_batch_size) * m.seq_len / l.cp));
  const Requirement requirements[] = {
      {r.backend == Backend::Gloo || r.device == RuntimeDevice::Cuda, "runtime.backend",
       "gloo on runtime.device cpu (NCCL needs cuda)"},
      {r.backend == Backend::Gloo || scenario.cluster.ranks_per_device == 1, "runtime.backend",
       "gloo when ranks share a device (cluster.ranks_per_device > 1): NCCL runs one rank per "
       "GPU"},
      {m.family != ModelFamily::Gpt2, "model.family",
       "llama, bert or distilbert (the runtime builds LLaMA stages and encoder classifiers; "
       "gpt2 is simulated only)"},
      {!is_encoder(m.family) || (l.pp == 1 && l.tp == 1), "layout.pp",
       "1, with layout.tp 1, for an encoder (the runtime trains it as one stage on each "
       "data-parallel replica; pipeline and tensor parallelism are simulated only)"},
      {!is_encoder(m.family) || l.recompute == Recompute::None, "layout.recompute",
       "none for an encoder (recomputation is simulated only)"},
      {!is_encoder(m.family) || l.schedule == sched::ScheduleKind::OneFOneB ||
           l.schedule == sched::ScheduleKind::GPipe,
       "layout.schedule",
       "1f1b or gpipe for an encoder (its layers have no split weight gradient for the "
       "zero-bubble schedules)"},
      {m.kv_heads() % l.tp == 0, "model.n_kv_heads",
       "a multiple of layout.tp (each tensor-parallel member holds its own key/value heads; "
       "replicating a head on several members, tp > n_kv_heads, is simulated only)"},
      {l.ep == 1 || (l.zero == 0 && !l.overlap_grad_reduce), "layout.ep",
       "1 with layout.zero or layout.overlap_grad_reduce (the runtime reduces expert gradients "
       "apart from the dense ones only in the ALLREDUCE step; sharded or bucketed, simulated "
       "only)"},
      {l.ep == 1 || l.dp_sync != sched::DpSync::WeightAverage, "layout.dp_sync",
       "allreduce or gather-scatter with layout.ep > 1 (averaging weights would mix experts)"},
      {l.ep == 1 || l.etp <= 1, "layout.etp",
       "1 or absent (expert tensor parallelism is simulated only)"},
      {!m.moe.enabled() || l.tp == 1, "layout.tp",
       "1 with model.moe (the runtime's experts are not split by tensor parallelism)"},
      {l.cp == 1 || l.cp_comm_type == CpCommType::P2p, "layout.cp_comm_type",
       "p2p with layout.cp > 1 (the runtime's context parallelism is ring attention; all_gather "
       "and a2a are simulated only)"},
      {l.cp == 1 || (l.ep == 1 && !m.moe.enabled()), "layout.cp",
       "1 with model.moe (a mixture of experts under context parallelism is simulated only)"},
      {t.precision != Precision::Fp8 || t.fp8_recipe == Fp8Recipe::Delayed ||
           t.fp8_recipe == Fp8Recipe::Tensorwise,
       "training.fp8_recipe",
       "delayed or tensorwise (the runtime scales fp8 operands per tensor; blockwise and mxfp8 "
       "are simulated only)"},
      {!r.cuda_graphs ||
           (r.device == RuntimeDevice::Cuda && scenario.world_size() == 1 &&
            l.schedule == sched::ScheduleKind::OneFOneB && l.zero == 0 &&
            l.recompute == Recompute::None && !m.moe.enabled() && !is_encoder(m.family)),
       "runtime.cuda_graphs",
       "false unless one rank trains a LLaMA without experts on a GPU (runtime.device cuda, world "
       "size 1, schedule 1f1b, zero 0, recompute none): the graphs need static shapes and F and B "
       "alternating on one stage"},
      {fp8_shapes, "training.precision",
       "bf16 unless d_model, and d_model, ffn_hidden and n_kv_heads x head size over layout.tp, "
       "and micro_batch_size x seq_len over layout.cp are multiples of 16 (fp8 GEMMs on a GPU)"},
      {!t.fp8_param_gather, "training.fp8_param_gather",
       "false (fp8 parameter gathers are simulated only)"},
      {t.grad_precision == Precision::Fp32, "training.grad_precision",
       "fp32 (the runtime reduces fp32 gradients; reducing them in bf16 is simulated only)"},
      {!l.tp_comm_overlap, "layout.tp_comm_overlap",
       "false (overlapping the tensor-parallel collectives is simulated only)"},
      {l.offload == Offload::None, "layout.offload", "none (offloading is simulated only)"},
      {l.zero != 3 || l.zero3_gather == sched::Zero3Gather::Stage, "layout.zero3_gather",
       "stage with layout.zero 3 (the runtime gathers whole stages; per-layer gathering is "
       "simulated only)"},
      {!l.hybrid_shard(), "layout.dp_shard",
       "absent, 0 or layout.dp (hybrid sharding, HSDP, is simulated only)"},
  };
  std::vector<Violation> violations;
  for (const Requirement& q : requirements)
    if (!q.met) violations.push_back({{q.key}, q.expected});
  if (schedule != nullptr && r.backend == Backend::Nccl)
    if (const auto disorder = sched::out_of_order_transfer(*schedule))
      violations.push_back({{"runtime.backend"},
                            "gloo for this schedule: NCCL matches a pair's pipeline messages in "
                            "the order they are posted, and " +
                                *disorder});
  return violations;
}

namespace {

/// Throws UserError "SOURCE: KEY: expected ..." for the first of `violations`, then checks that
/// runtime.device cuda has a GPU to run on.
void refuse(const Scenario& scenario, const std::vector<Violation>& violations) {
  const std::string where = scenario.source + ": ";
  if (!violations.empty()) throw UserError(where + violations.front().message(scenario));
  if (scenario.runtime.device == RuntimeDevice::Cuda) {
    try {
      gpu_of_local_rank(scenario.runtime.backend, 0, 1, visible_gpus());
    } catch (const UserError& error) {
      throw UserError(where + error.what());
    }
  }
}

}  // namespace

void check_runtime_supports(const Scenario& scenario) {
  refuse(scenario, runtime_violations(scenario));
}

void check_runtime_supports(const Scenario& scenario, const sched::Schedule& schedule) {
  refuse(scenario, runtime_violations(scenario, &schedule));
}

}  // namespace dtwin::rt
