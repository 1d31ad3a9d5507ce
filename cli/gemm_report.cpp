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
  const std::string path =
      std::filesystem::path(profile_path).replace_extension(".device.yaml").string();
  const std::string changed = save_fitted_description(scenario, profile, path);
  if (changed.empty()) return "";
  std::printf("%s; wrote %s\n", changed.c_str(), path.c_str());
  return path;
}

std::string save_fitted_description(const Scenario& scenario, const Profile& profile,
                                    const std::string& path) {
  const auto& description = scenario.cluster.device.description;
  if (profile.gemms.empty() || !description) return "";
  DeviceDescription fitted = *description;
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
  save_device_description(
      fitted, path,
      fmt::format("{} with gemm_efficiency fitted by `dtwin profile` of {} to the seconds of its "
                  "{} GEMMs at {}\n(was {}){}: name it as cluster.device.model to simulate other "
                  "layouts of this machine.",
                  description->source, scenario.source, profile.gemms.size(),
                  kPrecisionNames.name(precision), description->gemm_efficiency, host));
  return fmt::format("gemm_efficiency fitted to them: {:.4g} (the device description's: {:.4g}){}",
                     fitted.gemm_efficiency, description->gemm_efficiency, host);
}

}  // namespace dtwin
