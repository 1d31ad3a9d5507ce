#include "models/cost/memory_budget.hpp"

#include <algorithm>

namespace dtwin {

double tensor_memory_per_rank(const ClusterSpec& cluster) {
  const double share = cluster.device.memory / cluster.ranks_per_device;
  const auto& device = cluster.device.description;
  if (!device) return share;
  return std::max(0.0, share - device->reserved_memory) * (1 - device->allocator_fragmentation);
}

}  // namespace dtwin
