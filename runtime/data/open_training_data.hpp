// The training data a scenario reads: the corpus for a decoder, its classification set for an
// encoder.
#pragma once

#include <memory>
#include <string>

#include "models/spec/scenario.hpp"
#include "runtime/data/training_data.hpp"

namespace dtwin::rt {

/// The folder of an encoder's classification set: training.dataset under `data_dir`, or as
/// given when it holds a '/'.
std::string dataset_dir(const Scenario& scenario, const std::string& data_dir);

/// TokenDataset(data_dir, vocab_size, seq_len) for llama and gpt2, ClassificationDataset of
/// dataset_dir for bert and distilbert. Throws what their constructors throw.
std::unique_ptr<TrainingData> open_training_data(const Scenario& scenario,
                                                 const std::string& data_dir);

}  // namespace dtwin::rt
