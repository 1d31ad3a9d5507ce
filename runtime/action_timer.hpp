// Where a rank's measured timeline comes from. On the CPU an action runs while its handler
// runs, so the handler's host times are the action's. On a GPU the handler only queues kernels
// on the current stream (and NCCL's transfers on NCCL's own streams, which the current stream
// waits for where the schedule waits): the action's times are those of CUDA events recorded
// on the current stream around it, read back at the step's end and placed on the run clock.
#pragma once

#include <vector>

#include "runtime/clock.hpp"
#include "trace/timeline.hpp"

namespace dtwin::rt {

class ActionTimer {
 public:
  virtual ~ActionTimer() = default;
  /// Before a step's first action.
  virtual void begin_step() {}
  /// Around action number i of the step (i counts from 0 in execution order): start(i) before
  /// its handler runs, end(i) after.
  virtual void start(std::size_t /*i*/) {}
  virtual void end(std::size_t /*i*/) {}
  /// After the step's last action: gives events[i] (the step's actions in execution order, with
  /// host times in run-clock seconds) the device's times instead. Nothing on the CPU.
  virtual void finish_step(std::vector<trace::TimedAction>& /*events*/) {}
};

}  // namespace dtwin::rt
