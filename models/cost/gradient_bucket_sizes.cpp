#include "models/cost/gradient_bucket_sizes.hpp"

#include <algorithm>
#include <cmath>

namespace dtwin {

std::vector<int> gradient_bucket_sizes(const std::vector<int64_t>& numels, double bucket_elements) {
  std::vector<int> sizes;
  double filled = 0;  // elements in the last bucket
  for (auto it = numels.rbegin(); it != numels.rend(); ++it) {
    if (sizes.empty() || (filled > 0 && filled + static_cast<double>(*it) > bucket_elements)) {
      sizes.push_back(0);
      filled = 0;
    }
    ++sizes.back();
    filled += static_cast<double>(*it);
  }
  return sizes;
}

int even_bucket_count(const Scenario& scenario, const CostModel& cost, int stage) {
  const double per_gpu = cost.stage(stage).params / scenario.layout.tp;
  return std::max(1, static_cast<int>(std::ceil(per_gpu / cost.bucket_params())));
}

}  // namespace dtwin
