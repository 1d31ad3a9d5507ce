#include "runtime/training_inputs.hpp"

#include "runtime/data/open_training_data.hpp"
#include "runtime/hf_checkpoint.hpp"

namespace dtwin::rt {

void check_training_inputs(const Scenario& scenario, const std::string& data_dir) {
  open_training_data(scenario, data_dir);
  if (!scenario.model.checkpoint.empty()) check_scenario_checkpoint(scenario);
}

}  // namespace dtwin::rt
