// What a training run reads before it starts, checked once by the launcher so that bad input
// stops it with exit 2 before any rank runs.
#pragma once

#include <cstdint>
#include <string>

#include "models/spec/scenario.hpp"
#include "runtime/data/training_data.hpp"

namespace dtwin::rt {

/// Opens the scenario's training data under `data_dir` (for a decoder this tokenizes the corpus
/// once into its cache, which the ranks then read) and checks an encoder's model.checkpoint
/// against the model keys (check_scenario_checkpoint). Throws the UserError of the first
/// problem.
/// Also checks what with_epoch_steps checks.
void check_training_inputs(const Scenario& scenario, const std::string& data_dir);

/// Steps of `epochs` passes over `examples` at a global batch of `global_batch` examples:
/// ⌈epochs · examples / global_batch⌉ (the data stream runs on into the next epoch's order, so
/// the last step may hold examples of a pass beyond them).
std::int64_t steps_for_epochs(int epochs, std::int64_t examples, std::int64_t global_batch);

/// Whether step `step` (from 0) completes a pass over `examples`: its batch, stream positions
/// [step·G, step·G + G), holds position k·examples − 1 for some k ≥ 1.
bool ends_epoch(std::int64_t step, std::int64_t examples, std::int64_t global_batch);

/// `scenario` with training.steps = steps_for_epochs(training.epochs, the training split's
/// examples, dp · microbatches · micro_batch_size) when training.epochs > 0 and `data` is a
/// classification set; unchanged otherwise. Throws UserError when training.warmup_steps exceeds
/// those steps.
Scenario with_epoch_steps(const Scenario& scenario, const TrainingData& data);

}  // namespace dtwin::rt
