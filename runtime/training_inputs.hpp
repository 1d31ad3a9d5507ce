// What a training run reads before it starts, checked once by the launcher so that bad input
// stops it with exit 2 before any rank runs.
#pragma once

#include <string>

#include "models/spec/scenario.hpp"

namespace dtwin::rt {

/// Opens the scenario's training data under `data_dir` (for a decoder this tokenizes the corpus
/// once into its cache, which the ranks then read) and checks an encoder's model.checkpoint
/// against the model keys (check_scenario_checkpoint). Throws the UserError of the first
/// problem.
void check_training_inputs(const Scenario& scenario, const std::string& data_dir);

}  // namespace dtwin::rt
