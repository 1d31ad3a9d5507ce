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
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  sample.children_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  return sample;
}

double others_cpu_share(const CpuSample& before, const CpuSample& after) {
  const double total = after.total_s - before.total_s;
  if (total <= 0) return 0;
  const double others = (after.busy_s - before.busy_s) - (after.children_s - before.children_s);
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
  if (others_share > 0.1)
    line +=
        "\ncaution: the machine was busy while training: the measurement is of a shared machine";
  return line;
}

}  // namespace dtwin
