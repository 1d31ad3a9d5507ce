// What the validation says not to trust in a scenario's prediction, printed beside it.
#pragma once

#include <string>
#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// One line per setting of `scenario` for which bench/validate.py found dtwin's prediction
/// outside its accuracy targets (bench/results/validate.md), saying by how much and where to
/// read why; empty when none applies. Currently: ZeRO-3 over dp > 1 on a GPU cluster (against
/// Narayanan et al. 2021 Table 2's DeepSpeed runs, −24% to −70%, too fast, and a memory that
/// gathers whole stages).
std::vector<std::string> accuracy_cautions(const Scenario& scenario);

}  // namespace dtwin
