// What not to trust in a scenario's prediction, printed beside it.
#pragma once

#include <string>
#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// One line per setting of `scenario` whose prediction dtwin cannot vouch for, saying why and
/// where to read more; empty when none applies. Currently:
///  - ZeRO-3 over dp > 1 on a GPU cluster: against DeepSpeed's 2021 ZeRO-3 runs (Narayanan et al.
///    2021 Table 2) the prediction was 27-77% too fast, while torchtitan's FSDP2 runs were
///    within -2.6% to +7.4% (bench/results/validate.md);
///  - a cluster.device.peak_flops that differs by more than 0.5% from the peak at
///    training.precision of the cluster.device.model description, which times the kernels:
///    the MFU is then a fraction of the given peak, not of the device's.
std::vector<std::string> accuracy_cautions(const Scenario& scenario);

}  // namespace dtwin
