#include "runtime/training_inputs.hpp"

#include <fmt/format.h>

#include "base/user_error.hpp"
#include "runtime/data/classification_dataset.hpp"
#include "runtime/data/open_training_data.hpp"
#include "runtime/hf_checkpoint.hpp"

namespace dtwin::rt {

void check_training_inputs(const Scenario& scenario, const std::string& data_dir) {
  with_epoch_steps(scenario, *open_training_data(scenario, data_dir));
  if (!scenario.model.checkpoint.empty()) check_scenario_checkpoint(scenario);
}

std::int64_t steps_for_epochs(int epochs, std::int64_t examples, std::int64_t global_batch) {
  return (epochs * examples + global_batch - 1) / global_batch;
}

bool ends_epoch(std::int64_t step, std::int64_t examples, std::int64_t global_batch) {
  return (step + 1) * global_batch / examples > step * global_batch / examples;
}

Scenario with_epoch_steps(const Scenario& scenario, const TrainingData& data) {
  const auto* classification = dynamic_cast<const ClassificationDataset*>(&data);
  const TrainingSpec& t = scenario.training;
  if (!classification || t.epochs == 0) return scenario;
  const LayoutSpec& l = scenario.layout;
  const std::int64_t steps =
      steps_for_epochs(t.epochs, classification->train_examples(),
                       static_cast<std::int64_t>(l.dp) * l.microbatches * l.micro_batch_size);
  if (t.warmup_steps > steps)
    throw UserError(fmt::format(
        "training.warmup_steps: expected at most the {} steps of training.epochs {} ({} training "
        "examples, {} a step), got {}",
        steps, t.epochs, classification->train_examples(),
        l.dp * l.microbatches * l.micro_batch_size, t.warmup_steps));
  Scenario resolved = scenario;
  resolved.training.steps = static_cast<int>(steps);
  return resolved;
}

}  // namespace dtwin::rt
