// The median and the mean that the profiler and the communication benchmark report.
#pragma once

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace dtwin::rt {

/// The upper median of `values` (the element at index n/2 once sorted; the middle one for odd
/// n), in their unit. Throws std::logic_error for an empty list.
inline double median(std::vector<double> values) {
  if (values.empty()) throw std::logic_error("median of no values");
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

/// The arithmetic mean of `values`, in their unit. Throws std::logic_error for an empty list.
inline double mean(const std::vector<double>& values) {
  if (values.empty()) throw std::logic_error("mean of no values");
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

}  // namespace dtwin::rt
