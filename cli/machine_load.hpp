// How busy the machine was while dtwin measured: the noise a measured figure carries.
#pragma once

#include <string>

namespace dtwin {

/// CPU time of the whole machine (/proc/stat's first line, all cores) and of this process with its
/// waited-for children (getrusage RUSAGE_SELF and RUSAGE_CHILDREN), in seconds.
struct CpuSample {
  double busy_s = 0;   ///< user, nice, system, irq, softirq and steal time of every core
  double total_s = 0;  ///< busy_s plus idle and iowait
  double own_s = 0;    ///< user + system time of this process and of its children that ended
};

/// The sample now; zeros where /proc/stat cannot be read.
CpuSample sample_cpu();

/// The share of the machine's CPU capacity (all cores) that processes other than this one and its
/// children used between `before` and `after` (children waited for by then), in [0, 1]; 0 when
/// no time passed.
double others_cpu_share(const CpuSample& before, const CpuSample& after);

/// One line on the measurement's noise for `dtwin run`: the measured steps' standard deviation
/// (seconds `step_std_s` about a mean of `step_s`), the other processes' CPU share during
/// training, and whether the prediction's relative `error` lies within two standard deviations
/// of the measured steps (then the error is not distinguishable from the machine's noise).
std::string noise_report(double step_s, double step_std_s, double error, double others_share);

/// "" when `others_share` (others_cpu_share while `what` ran) is at most 10%, else a line
/// "caution: other processes used N% of the machine's CPU while WHAT: ..." saying the figures
/// measured a shared machine.
std::string busy_machine_caution(double others_share, const std::string& what);

}  // namespace dtwin
