#include "runtime/lr_schedule.hpp"

#include <algorithm>

namespace dtwin::rt {

double learning_rate(const TrainingSpec& t, std::int64_t step) {
  if (step < t.warmup_steps) return t.lr * static_cast<double>(step) / t.warmup_steps;
  if (t.lr_decay_style == LrDecay::Constant) return t.lr;
  const double remaining = static_cast<double>(t.steps - step);
  return t.lr * std::max(0.0, remaining / std::max(1, t.steps - t.warmup_steps));
}

void set_learning_rate(std::map<int, StageState>& stages, double lr) {
  for (auto& [stage, state] : stages)
    for (auto& group : state.current_optimizer().param_groups())
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

}  // namespace dtwin::rt
