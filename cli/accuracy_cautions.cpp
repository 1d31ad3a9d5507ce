#include "cli/accuracy_cautions.hpp"

namespace dtwin {

std::vector<std::string> accuracy_cautions(const Scenario& scenario) {
  std::vector<std::string> cautions;
  const LayoutSpec& l = scenario.layout;
  if (l.zero == 3 && l.dp > 1 && scenario.cluster.device.kind == DeviceKind::Gpu)
    cautions.push_back(
        "ZeRO-3 on GPUs is priced as NCCL rings that gather a whole stage's weights at once; "
        "against published DeepSpeed ZeRO-3 runs (Narayanan et al. 2021 Table 2) these "
        "predictions were 24-70% too fast and their gathered memory far too large "
        "(bench/results/validate.md)");
  return cautions;
}

}  // namespace dtwin
