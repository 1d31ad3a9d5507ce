#include "cli/accuracy_cautions.hpp"

#include <cmath>

#include <fmt/format.h>

namespace dtwin {

std::vector<std::string> accuracy_cautions(const Scenario& scenario) {
  std::vector<std::string> cautions;
  const LayoutSpec& l = scenario.layout;
  const DeviceSpec& device = scenario.cluster.device;
  if (l.zero == 3 && l.dp > 1 && device.kind == DeviceKind::Gpu)
    cautions.push_back(
        "ZeRO-3 on GPUs is priced as NCCL rings, per layer hidden under compute but for one "
        "layer's share (zero3_gather layer) or per stage (stage); against DeepSpeed's 2021 "
        "ZeRO-3 runs (Narayanan et al. 2021 Table 2) the per-layer predictions were 27-77% too "
        "fast, against torchtitan's FSDP2 runs -2.6% to +7.4% (bench/results/validate.md)");
  if (device.description) {
    const double peak = device.description->peak_flops(scenario.training.precision);
    if (std::abs(device.peak_flops - peak) > 0.005 * peak)
      cautions.push_back(fmt::format(
          "cluster.device.peak_flops ({:.4g} TFLOP/s) is not the {} peak of cluster.device.model "
          "{} ({:.4g} TFLOP/s), which times the kernels: the MFU is a fraction of the former",
          device.peak_flops / 1e12, kPrecisionNames.name(scenario.training.precision), device.model,
          peak / 1e12));
  }
  return cautions;
}

}  // namespace dtwin
