// One pipeline stage and one microbatch of input, ready to run forward and backward: what the
// profiler and the compute probe time.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "models/nn/stage_module.hpp"
#include "models/spec/scenario.hpp"
#include "models/spec/stage_partition.hpp"
#include "runtime/data/training_data.hpp"

namespace dtwin::rt {

/// Stage `stage` of `scenario` with one microbatch (layout.micro_batch_size sequences of
/// model.seq_len tokens): real tokens on the first stage, random hidden states
/// [micro_batch_size, seq_len, d_model] elsewhere ([.., seq_len/tp, ..] under sequence
/// parallelism), and a random output gradient of that shape for stages without the loss. With
/// a tensor-parallel group `tp` of size > 1 the module is member tp.rank's shards, whose forward
/// and backward run the group's collectives (every member must run the same passes); with an
/// expert-parallel group `ep` of size > 1 it holds member ep.rank's experts and its MoE layers
/// exchange token copies with the other members; with a context-parallel group `cp` of size > 1
/// it holds member cp.rank's tokens of each sequence (seq_len/cp of them) and its attention
/// passes keys and values around the group's ring. Its MoE layers route balanced
/// (RouterImpl::set_balanced).
struct StageRun {
  StageRun(const Scenario& scenario, const StageLayers& stage, const TrainingData& data,
           const nn::TensorParallelGroup& tp = {}, torch::Device device = torch::kCPU,
           const nn::ExpertParallelGroup& ep = {}, const nn::ContextParallelGroup& cp = {});

  /// Makes `next` (on the CPU; whole sequences) the batch, the context-parallel member's tokens
  /// of it on the stage's device, and on a stage with the embedding its input.
  void load(const Batch& next);

  /// The stage's output: the loss on the last stage, else hidden states.
  torch::Tensor forward();
  /// Backward from `out` (forward's result) into the weights and the input.
  void backward(const torch::Tensor& out);

  const StageLayers& stage;
  std::shared_ptr<nn::StageModule> module;
  torch::Device device;
  Batch batch;
  torch::Tensor input, grad;
};

}  // namespace dtwin::rt
