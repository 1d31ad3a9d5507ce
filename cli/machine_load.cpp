#include "cli/machine_load.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

namespace dtwin {
namespace {

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
}

}  // namespace

CpuSample sample_cpu() {
  CpuSample sample;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal &&
      cpu == "cpu") {
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    sample.busy_s = (user + nice + system + irq + softirq + steal) / tick;
    sample.total_s = sample.busy_s + (idle + iowait) / tick;
  }
  for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage usage{};
    getrusage(who, &usage);
    sample.own_s += seconds(usage.ru_utime) + seconds(usage.ru_stime);
  }
  return sample;
}

double others_cpu_share(const CpuSample& before, const CpuSample& after) {
  const double total = after.total_s - before.total_s;
  if (total <= 0) return 0;
  const double others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s);
  return std::clamp(others / total, 0.0, 1.0);
}

std::string noise_report(double step_s, double step_std_s, double error, double others_share) {
  const double spread = step_s > 0 ? step_std_s / step_s : 0;
  const bool within = std::abs(error) <= 2 * spread;
  std::string line = fmt::format(
      "measurement noise: the measured steps' standard deviation is {:.1f}% of their mean; "
      "other processes used {:.0f}% of the machine's CPU during training; the error ({:+.1f}%) "
      "is {} two standard deviations of the measured steps",
      spread * 100, others_share * 100, error * 100, within ? "within" : "outside");
  const std::string caution = busy_machine_caution(others_share, "training");
  return caution.empty() ? line : line + "\n" + caution;
}

std::string busy_machine_caution(double others_share, const std::string& what) {
  if (others_share <= 0.1) return "";
  return fmt::format(
      "caution: other processes used {:.0f}% of the machine's CPU while {}: the figures are of a "
      "shared machine",
      others_share * 100, what);
}

}  // namespace dtwin
