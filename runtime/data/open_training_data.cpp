#include "runtime/data/open_training_data.hpp"

#include <filesystem>

#include "runtime/data/classification_dataset.hpp"
#include "runtime/data/token_dataset.hpp"

namespace dtwin::rt {

std::string dataset_dir(const Scenario& scenario, const std::string& data_dir) {
  const std::string& dataset = scenario.training.dataset;
  if (dataset.find('/') != std::string::npos) return dataset;
  return (std::filesystem::path(data_dir) / dataset).string();
}

std::unique_ptr<TrainingData> open_training_data(const Scenario& scenario,
                                                 const std::string& data_dir) {
  const ModelSpec& m = scenario.model;
  if (is_encoder(m.family))
    return std::make_unique<ClassificationDataset>(dataset_dir(scenario, data_dir), m.seq_len,
                                                   m.vocab_size, m.num_labels);
  return std::make_unique<TokenDataset>(data_dir, m.vocab_size, m.seq_len);
}

}  // namespace dtwin::rt
