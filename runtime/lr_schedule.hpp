// The learning rate of each training step: a linear warm-up, then constant or a linear decay
// (training.warmup_steps, training.lr_decay_style).
#pragma once

#include <cstdint>
#include <map>

#include "models/spec/scenario.hpp"
#include "runtime/rank_model.hpp"

namespace dtwin::rt {

/// The learning rate of step `step` (0-based) of `t.steps`, as transformers'
/// get_linear_schedule_with_warmup (and get_constant_schedule_with_warmup) give it:
/// lr · step / warmup_steps while step < warmup_steps, then lr (constant) or
/// lr · (steps − step) / (steps − warmup_steps) (linear, 0 at the end).
double learning_rate(const TrainingSpec& t, std::int64_t step);

/// Sets every parameter group's learning rate of `stages`' optimizers (under ZeRO, their
/// shards') to `lr`.
void set_learning_rate(std::map<int, StageState>& stages, double lr);

}  // namespace dtwin::rt
