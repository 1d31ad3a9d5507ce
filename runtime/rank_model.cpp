#include "runtime/rank_model.hpp"

#include <cstdio>

#include "runtime/fused_adamw.hpp"
#include "runtime/hf_checkpoint.hpp"

namespace dtwin::rt {

std::size_t model_state_bytes(const StageState& stage) {
  if (stage.zero) return stage.zero->model_state_bytes();
  std::size_t bytes = 0;
  for (const torch::Tensor& p : stage.module->parameters()) {
    bytes += p.numel() * p.element_size();
    if (p.grad().defined()) bytes += p.grad().numel() * p.grad().element_size();
  }
  return bytes + adamw_state_bytes(*stage.optimizer);
}

std::map<int, StageState> build_rank_model(const Scenario& scenario,
                                           const StagePartition& partition,
                                           const sched::Layout& layout, int rank,
                                           const nn::TensorParallelGroup& tp, torch::Device device,
                                           const nn::ExpertParallelGroup& ep,
                                           const nn::ContextParallelGroup& cp) {
  std::map<int, StageState> stages;
  for (int v = 0; v < layout.virtual_stages; ++v) {
    const int stage = layout.stage_of(layout.pipeline_rank(rank), v);
    StageState state;
    state.module = std::make_shared<nn::StageModule>(scenario, partition.stage(stage), device,
                                                     torch::kFloat32, tp, ep, cp);
    if (!scenario.model.checkpoint.empty()) {
      const std::vector<std::string> notes =
          load_scenario_checkpoint(scenario, state.module->encoder());
      if (rank == 0 && tp.rank == 0)
        for (const std::string& note : notes) std::printf("checkpoint: %s\n", note.c_str());
    }
    // The executor's backward takes loss/m (runtime/executor.cpp): the MoE layers' auxiliary
    // losses are averaged over the microbatches alike.
    state.module->set_aux_loss_scale(1.0 / layout.microbatches);
    torch::optim::AdamWOptions options(scenario.training.lr);
    // Pretraining's AdamW for decoders (Megatron-LM's, GPT-3's betas); fine-tuning's for
    // encoders (transformers' Trainer: betas 0.9/0.999, no weight decay).
    if (is_encoder(scenario.model.family))
      options.betas({0.9, 0.999}).eps(1e-8).weight_decay(0.0);
    else
      options.betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1);
    if (layout.zero > 0)
      state.zero = std::make_unique<ZeroStage>(*state.module, layout.zero, layout.dp,
                                               layout.dp_index(rank), options);
    else
      state.optimizer = std::make_unique<FusedAdamW>(state.module->parameters(), options);
    stages.emplace(stage, std::move(state));
  }
  return stages;
}

}  // namespace dtwin::rt
