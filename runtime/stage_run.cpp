#include "runtime/stage_run.hpp"

namespace dtwin::rt {

StageRun::StageRun(const Scenario& scenario, const StageCost& stage, const TokenDataset& data,
                   const nn::TensorParallelGroup& tp)
    : stage(stage),
      module(std::make_shared<nn::StageModule>(scenario, stage, torch::kCPU, torch::kFloat32, tp)) {
  const ModelSpec& m = scenario.model;
  const int b = scenario.layout.micro_batch_size;
  const int64_t sequence = m.seq_len / (tp.sequence_parallel ? tp.size : 1);
  batch = data.batch(0, 0, 0, 1, 1, b, scenario.training.seed);
  const torch::ScalarType compute = module->compute_dtype();
  input = stage.has_embedding
              ? batch.inputs
              : torch::randn({b, sequence, m.d_model}).to(compute).requires_grad_(true);
  grad = (torch::randn({b, sequence, m.d_model}) * 1e-3).to(compute);
}

torch::Tensor StageRun::forward() {
  return module->forward(input, stage.has_head ? batch.targets : torch::Tensor());
}

void StageRun::backward(const torch::Tensor& out) {
  if (stage.has_head)
    out.backward();
  else
    out.backward(grad);
}

}  // namespace dtwin::rt
