#include "cli/accuracy_cautions.hpp"

namespace dtwin {

std::vector<std::string> accuracy_cautions(const Scenario& scenario) {
  std::vector<std::string> cautions;
  const LayoutSpec& l = scenario.layout;
  if (l.zero == 3 && l.dp > 1 && scenario.cluster.device.kind == DeviceKind::Gpu)
    cautions.push_back(
        "ZeRO-3 on GPUs is priced as NCCL rings, per layer hidden under compute but for one "
        "layer's share (zero3_gather layer) or per stage (stage); against published DeepSpeed "
        "ZeRO-3 runs (Narayanan et al. 2021 Table 2) the per-layer predictions were 27-77% too "
        "fast (bench/results/validate.md)");
  return cautions;
}

}  // namespace dtwin
