#include "models/cost/host_queue.hpp"

#include <algorithm>

namespace dtwin {

double queued_seconds(const std::vector<Issue>& issues, int repeats) {
  double host = 0, device = 0;
  for (int r = 0; r < repeats; ++r) {
    for (const Issue& issue : issues) {
      host += issue.host;
      device = std::max(device, host) + issue.device;
    }
  }
  return device;
}

double host_stall_seconds(const std::vector<Issue>& issues, int repeats) {
  double busy = 0;
  for (const Issue& issue : issues) busy += issue.device;
  return std::max(0.0, queued_seconds(issues, repeats) - busy * repeats);
}

}  // namespace dtwin
