// Processes that keep a host's cores busy while a measurement runs, standing in for the ranks of
// a training run that share the host and compute.
#pragma once

#include <sys/types.h>

#include <vector>

namespace dtwin::rt {

/// Starts `count` >= 0 child processes that each spin on a core until the object is destroyed
/// (then killed and reaped; a child also dies with its parent, PR_SET_PDEATHSIG). Throws
/// std::runtime_error when a child cannot be started (the ones started are killed first).
class BusyProcesses {
 public:
  explicit BusyProcesses(int count);
  ~BusyProcesses();
  BusyProcesses(const BusyProcesses&) = delete;
  BusyProcesses& operator=(const BusyProcesses&) = delete;

 private:
  void stop();
  std::vector<pid_t> children_;
};

}  // namespace dtwin::rt
