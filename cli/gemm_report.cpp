#include "cli/gemm_report.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "models/cost/gemm_fit.hpp"

namespace dtwin {

std::string report_gemms(const Scenario& scenario, const Profile& profile,
                         const std::string& profile_path) {
  if (profile.gemms.empty()) return "";
  std::printf("%-20s %7s %7s %7s %10s %9s\n", "GEMM", "m", "n", "k", "ms", "TFLOP/s");
  for (const GemmPoint& g : profile.gemms)
    std::printf("%-20s %7.0f %7.0f %7.0f %10.4f %9.3f\n", g.name.c_str(), g.m, g.n, g.k,
                g.seconds * 1e3, 2 * g.m * g.n * g.k / g.seconds / 1e12);
  const DeviceSpec& device = scenario.cluster.device;
  const double achieved = achieved_gemm_flops(profile.gemms);
  std::printf("GEMMs together: %.3f TFLOP/s, %.1f%% of cluster.device.peak_flops (%.3g FLOP/s)\n",
              achieved / 1e12, 100 * achieved / device.peak_flops, device.peak_flops);
  if (!device.description) return "";
  DeviceDescription fitted = *device.description;
  const Precision precision = scenario.training.precision;
  fitted.gemm_efficiency = fitted_gemm_efficiency(fitted, profile.gemms, precision);
  std::string host;
  if (profile.host_op_seconds > 0) {
    host = fmt::format(
        ", host_op_overhead {:.3g} s and host_op_overhead_no_grad {:.3g} s "
        "measured (were {:.3g} s and {:.3g} s)",
        profile.host_op_seconds, profile.host_op_seconds_no_grad, fitted.host_op_overhead,
        fitted.host_op_overhead_no_grad);
    fitted.host_op_overhead = profile.host_op_seconds;
    fitted.host_op_overhead_no_grad = profile.host_op_seconds_no_grad;
  }
  std::filesystem::path path = profile_path;
  path.replace_extension(".device.yaml");
  save_device_description(
      fitted, path.string(),
      fmt::format("{} with gemm_efficiency fitted by `dtwin profile` of {} to the seconds of its "
                  "{} GEMMs at {}\n(was {}){}: name it as cluster.device.model to simulate other "
                  "layouts of this machine.",
                  device.description->source, scenario.source, profile.gemms.size(),
                  kPrecisionNames.name(precision), device.description->gemm_efficiency, host));
  std::printf("gemm_efficiency fitted to them: %.4g (the device description's: %.4g)%s; wrote %s\n",
              fitted.gemm_efficiency, device.description->gemm_efficiency, host.c_str(),
              path.c_str());
  return path.string();
}

}  // namespace dtwin
