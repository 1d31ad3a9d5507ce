// How much a stage's compute varies from step to step, from its actions replayed over several
// steps: what the profile's StageSeconds::variation holds.
#pragma once

#include <map>
#include <vector>

#include "runtime/calibrate/compute_replay.hpp"

namespace dtwin::rt {

/// The independent spread of each stage's F, B, I and W between steps, from `replayed`
/// (replay_compute's seconds of one rank over `steps` timed steps, each action's k-th value from
/// step k / (its count per step)). The log-seconds form a table of the rank's action instances
/// (rows) by steps (columns); the residual of the additive two-way model (row effect + step
/// effect, fitted by means: two-way ANOVA without replication) is what varies independently of
/// the action and of the step's shared speed. Its variance for a stage's rows,
/// sigma^2 = sum e^2 * rows / (stage rows * (rows - 1) * (steps - 1)) (unbiased), gives the
/// coefficient of variation of a log-normal, sqrt(exp(sigma^2) - 1) (dimensionless). Returns
/// stage -> variation for the stages with such actions; empty with fewer than 2 steps or 2
/// rows, or any non-positive seconds.
std::map<int, double> step_variation(const ActionSeconds& replayed, int steps);

/// Squared deviations of log-seconds from their group's mean, summed over groups, with their
/// degrees of freedom (values less groups): a pooled estimate of the log variance is sum / df.
struct LogSquares {
  double sum = 0;
  int df = 0;
  LogSquares& operator+=(const LogSquares& other) {
    sum += other.sum;
    df += other.df;
    return *this;
  }
};

/// The LogSquares of `seconds`, groups of measured seconds (each > 0, e.g. one group per action
/// kind of a stage); a group of one value adds nothing.
LogSquares within_group_log_squares(const std::map<int, std::vector<double>>& seconds);

/// The coefficient of variation of a log-normal whose log variance is `sigma2`,
/// sqrt(exp(sigma2) - 1) (dimensionless); 0 for sigma2 <= 0.
double lognormal_variation(double sigma2);

}  // namespace dtwin::rt
