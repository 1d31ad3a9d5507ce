// Comparing two training runs' loss curves step by step (tests of lower precisions).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace dtwin::test {

/// Checks that `losses` has `reference`'s length and every step lies within `bound` (relative)
/// of it; returns the largest relative difference (the caller checks it is above 0: really
/// computed differently).
inline double check_tracks(const std::vector<double>& losses, const std::vector<double>& reference,
                           double bound) {
  REQUIRE(losses.size() == reference.size());
  double largest = 0;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    CAPTURE(i, losses[i], reference[i]);
    const double relative = std::abs(losses[i] - reference[i]) / std::abs(reference[i]);
    CHECK(relative <= bound);
    largest = std::max(largest, relative);
  }
  return largest;
}

}  // namespace dtwin::test
