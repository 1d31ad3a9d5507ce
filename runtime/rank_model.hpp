// What one rank trains: its stages' modules and optimizers.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>

#include "models/cost_model.hpp"
#include "models/scenario.hpp"
#include "models/stage_module.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::rt {

/// One stage held by this rank: its LibTorch module and that module's optimizer.
struct StageState {
  std::shared_ptr<nn::StageModule> module;
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

/// The stages the layout places on `rank` (stage s runs on pipeline rank s mod pp), built from
/// the scenario's seed so that any layout starts from the same weights, each with an AdamW
/// optimizer (lr from training.lr, weight decay 0.1, betas 0.9/0.95, eps 1e-8).
std::map<int, StageState> build_rank_model(const Scenario& scenario, const CostModel& cost,
                                           const sched::Layout& layout, int rank);

}  // namespace dtwin::rt
