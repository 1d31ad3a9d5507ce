// One action as it ran on a rank, predicted or measured: the element of a timeline.
#pragma once

#include "schedules/action.hpp"

namespace dtwin::trace {

using sched::Action;
using sched::ActionKind;

/// One executed action. Times in seconds from the common origin of the step (or of the run).
struct TimedAction {
  int rank = 0;
  Action action;
  int step = 0;
  double start = 0;
  double end = 0;
  /// For communication actions: seconds of [start, end] during which this rank was blocked by
  /// the transfer itself (waiting for a slow peer to arrive is idle time, not communication).
  /// For compute actions: seconds of the communication inside the action (tensor-parallel
  /// collectives, offload transfers, waits for prefetched gathers).
  double exposed_comm = 0;
  /// For compute actions on a CPU device: seconds the rank's thread ran on a core. Measured: the
  /// thread's CPU time over the action (CLOCK_THREAD_CPUTIME_ID, recorded with one thread per
  /// rank). Predicted: the action's seconds alone on its core, without its communication. What
  /// the action's duration holds beyond it and exposed_comm is time waiting for a core. 0 where
  /// unknown (GPU devices, several threads per rank, communication actions).
  double cpu = 0;
  /// For compute actions on a CPU device: CPU seconds the rank's other threads ran during the
  /// tensor-parallel collectives inside it (Gloo's worker and I/O threads), which the other
  /// ranks of its host lacked meanwhile; part of exposed_comm's time. Measured:
  /// TensorParallelGroup::collective_helper_cpu_seconds over the action (one thread per rank);
  /// predicted: the profile's tp_forward_cpu or tp_backward_cpu. 0 where unknown or none.
  double comm_cpu = 0;
  /// Bytes the rank holds when the action ends. Predicted: action_memory_bytes's `after`
  /// (models/cost/schedule_memory.hpp); measured: its process's live tensor bytes
  /// (runtime/peak_memory.hpp's live_memory_bytes; a TP group's member 0). 0 where unknown.
  double memory = 0;
  /// Predicted: the most bytes the rank holds while the action runs (action_memory_bytes's
  /// `peak`, a backward's workspace included). 0 where unknown (measured).
  double peak_memory = 0;
};

}  // namespace dtwin::trace
