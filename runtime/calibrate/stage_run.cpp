#include "runtime/calibrate/stage_run.hpp"

#include "models/nn/moe.hpp"

namespace dtwin::rt {

StageRun::StageRun(const Scenario& scenario, const StageLayers& stage, const TrainingData& data,
                   const nn::TensorParallelGroup& tp, torch::Device device,
                   const nn::ExpertParallelGroup& ep, const nn::ContextParallelGroup& cp)
    : stage(stage),
      module(
          std::make_shared<nn::StageModule>(scenario, stage, device, torch::kFloat32, tp, ep, cp)),
      device(device) {
  // Every MoE layer routes balanced: the passes are timed at the mean load, and the simulator
  // adds the busiest expert-parallel member's share from model.moe.load_imbalance. Routed by
  // the untrained router instead, moe-ep2's profile timed all-to-all waits of 22 ms per F where
  // training's fell from 20 to 13.5 ms as its router balanced (busiest member's routed copies
  // over the mean per step: 1.11 over steps 1-3, 1.03 over steps 100-150).
  for (const auto& child : module->modules())
    if (const auto router = std::dynamic_pointer_cast<nn::RouterImpl>(child))
      router->set_balanced(true);
  const ModelSpec& m = scenario.model;
  const int b = scenario.layout.micro_batch_size;
  const int64_t sequence = m.seq_len / cp.size / (tp.sequence_parallel ? tp.size : 1);
  // An expert-parallel member reads its own sequences (replica ep.rank's first), as in training.
  load(data.batch(0, ep.size > 1 ? ep.rank : 0, 0, scenario.layout.dp, 1, b,
                  scenario.training.seed));
  const auto compute = torch::TensorOptions(module->compute_dtype()).device(device);
  if (!stage.has_embedding)
    input = torch::randn({b, sequence, m.d_model}).to(compute).requires_grad_(true);
  grad = (torch::randn({b, sequence, m.d_model}) * 1e-3).to(compute);
}

void StageRun::load(const Batch& next) {
  const nn::ContextParallelGroup& cp = module->context_parallel();
  batch = {nn::context_parallel_shard(next.inputs, cp).to(device),
           nn::context_parallel_shard(next.targets, cp).to(device)};
  if (stage.has_embedding) input = batch.inputs;
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
