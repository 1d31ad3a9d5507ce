#include "runtime/rank_model.hpp"

namespace dtwin::rt {

std::map<int, StageState> build_rank_model(const Scenario& scenario, const CostModel& cost,
                                           const sched::Layout& layout, int rank) {
  std::map<int, StageState> stages;
  for (int v = 0; v < layout.virtual_stages; ++v) {
    const int stage = v * layout.pp + layout.pipeline_rank(rank);
    StageState state;
    state.module = std::make_shared<nn::StageModule>(scenario, cost.stage(stage));
    torch::optim::AdamWOptions options(scenario.training.lr);
    options.betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1);
    state.optimizer = std::make_unique<torch::optim::AdamW>(state.module->parameters(), options);
    stages.emplace(stage, std::move(state));
  }
  return stages;
}

}  // namespace dtwin::rt
