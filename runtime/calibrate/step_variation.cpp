#include "runtime/calibrate/step_variation.hpp"

#include <cmath>
#include <vector>

namespace dtwin::rt {

std::map<int, double> step_variation(const ActionSeconds& replayed, int steps) {
  struct Row {
    int stage = 0;
    std::vector<double> logs;  // one per step
  };
  if (steps < 2) return {};
  std::vector<Row> rows;
  for (const auto& [action, seconds] : replayed) {
    const sched::ActionKind kind = action.second;
    if (!sched::is_compute(kind)) continue;
    const std::size_t per_step = seconds.size() / steps;
    if (per_step == 0 || per_step * steps != seconds.size()) return {};
    for (std::size_t j = 0; j < per_step; ++j) {
      Row row{action.first, {}};
      for (int s = 0; s < steps; ++s) {
        const double value = seconds[s * per_step + j];
        if (!(value > 0)) return {};
        row.logs.push_back(std::log(value));
      }
      rows.push_back(std::move(row));
    }
  }
  const auto m = static_cast<double>(rows.size());
  if (rows.size() < 2) return {};
  std::vector<double> step_mean(steps, 0);
  double grand = 0;
  for (const Row& row : rows)
    for (int s = 0; s < steps; ++s) {
      step_mean[s] += row.logs[s] / m;
      grand += row.logs[s] / (m * steps);
    }
  std::map<int, std::pair<double, int>> squares;  // stage -> (sum of e^2, rows)
  for (const Row& row : rows) {
    double row_mean = 0;
    for (double v : row.logs) row_mean += v / steps;
    auto& [sum, count] = squares[row.stage];
    for (int s = 0; s < steps; ++s) {
      const double e = row.logs[s] - row_mean - step_mean[s] + grand;
      sum += e * e;
    }
    ++count;
  }
  std::map<int, double> variation;
  for (const auto& [stage, sum_count] : squares) {
    const auto [sum, count] = sum_count;
    const double sigma2 = sum * m / (count * (m - 1) * (steps - 1));
    variation[stage] = lognormal_variation(sigma2);
  }
  return variation;
}

LogSquares within_group_log_squares(const std::map<int, std::vector<double>>& seconds) {
  LogSquares squares;
  for (const auto& [group, values] : seconds) {
    if (values.size() < 2) continue;
    double mean = 0;
    for (double v : values) mean += std::log(v) / static_cast<double>(values.size());
    for (double v : values) squares.sum += (std::log(v) - mean) * (std::log(v) - mean);
    squares.df += static_cast<int>(values.size()) - 1;
  }
  return squares;
}

double lognormal_variation(double sigma2) {
  return sigma2 > 0 ? std::sqrt(std::expm1(sigma2)) : 0;
}

}  // namespace dtwin::rt
