// What one rank trains: its stages' modules and optimizers.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>

#include "models/nn/stage_module.hpp"
#include "models/spec/scenario.hpp"
#include "models/spec/stage_partition.hpp"
#include "runtime/zero_stage.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::rt {

/// One stage held by this rank: its LibTorch module and either that module's optimizer (ZeRO 0)
/// or its parameters, gradients and optimizer sharded over the DP group (ZeRO 1 to 3).
struct StageState {
  std::shared_ptr<nn::StageModule> module;
  std::unique_ptr<torch::optim::AdamW> optimizer;  ///< null under ZeRO
  std::unique_ptr<ZeroStage> zero;                 ///< null under ZeRO 0

  /// The optimizer whose state a checkpoint holds: the module's, or this replica's shard's.
  torch::optim::AdamW& current_optimizer() { return zero ? zero->optimizer() : *optimizer; }
};

/// Bytes `stage` holds now for its model states: its parameters' and gradients' storages and
/// its AdamW state tensors (ZeroStage::model_state_bytes under ZeRO).
std::size_t model_state_bytes(const StageState& stage);

/// The stages of `partition` that the layout places on schedule rank `rank` (stage s runs on
/// pipeline rank s mod pp), as member `tp` of its tensor-parallel group (size 1: none), built from
/// the scenario's seed so that any layout starts from the same weights (an encoder from
/// model.checkpoint when given; its notes printed by rank 0), each with an AdamW optimizer (lr
/// from training.lr; weight decay 0.1, betas 0.9/0.95, eps 1e-8 for a decoder; no weight decay,
/// betas 0.9/0.999 for an encoder, as transformers' Trainer), over the whole
/// stage or, when layout.zero > 0, over this rank's shard of it (ZeroStage); the fp32 parameters,
/// gradients and optimizer state on `device`; with experts, member `ep` of its expert-parallel
/// group (size 1: every expert here), its MoE layers' auxiliary losses scaled by
/// 1/layout.microbatches as the executor's backward scales the loss; with context parallelism,
/// member `cp` of its context-parallel group (size 1: none).
std::map<int, StageState> build_rank_model(
    const Scenario& scenario, const StagePartition& partition, const sched::Layout& layout,
    int rank, const nn::TensorParallelGroup& tp = {}, torch::Device device = torch::kCPU,
    const nn::ExpertParallelGroup& ep = {}, const nn::ContextParallelGroup& cp = {});

}  // namespace dtwin::rt
