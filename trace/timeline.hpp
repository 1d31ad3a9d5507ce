// A timeline: when each action of a schedule ran on each rank, predicted or measured, and the
// Chrome-trace and summary forms that the simulator and the runtime both write.
#pragma once

#include <string>
#include <vector>

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
};

/// Per-rank totals over one step, in seconds and bytes.
struct RankSummary {
  double compute_s = 0;          ///< F, B, I, W and OPTIM
  double comm_s = 0;             ///< exposed communication
  double idle_s = 0;             ///< step time - compute - exposed communication
  double peak_memory_bytes = 0;  ///< predicted peak, or measured peak of live tensors
  bool memory_ok = true;         ///< peak memory fits the device's share
  /// Weights, gradients and optimizer state held at the optimizer step: predicted
  /// (model_state_bytes of models/cost/schedule_memory.hpp), or measured from the tensors.
  double model_state_bytes = 0;
};

/// One step of a timeline in figures: seconds, a fraction, tokens/s and MFU, one RankSummary per
/// TP group (index = group; a rank when tp = 1; schedules/schedule.hpp's glossary).
struct StepSummary {
  double step_time_s = 0;
  /// Standard deviation of the step time over the steps summarised (population; 0 for one step).
  double step_time_std_s = 0;
  double bubble_fraction = 0;  ///< mean over ranks of idle_s / step_time_s
  double tokens_per_s = 0;
  double mfu = -1;  ///< model FLOPs utilisation in [0, 1]; -1 when peak is unknown
  std::vector<RankSummary> ranks;
};

/// Totals of the events of one step per rank: compute_s, comm_s and idle_s (peak memory is left
/// for the caller). `step_time_s` is the latest end minus the earliest start over all ranks.
StepSummary summarize(const std::vector<TimedAction>& events, int world_size);

/// The mean per-step summary of a multi-step timeline: each step's events (TimedAction::step)
/// are summarised alone, then step time, bubble and per-rank totals are averaged, and
/// step_time_std_s is the steps' spread. With `drop_first` and more than one step, the first
/// (warm-up) step is left out.
StepSummary summarize_steps(const std::vector<TimedAction>& events, int world_size,
                            bool drop_first);

/// Chrome trace-event JSON (chrome://tracing, Perfetto): pid = rank, tid 0 = compute and
/// 1 = communication, one "X" event per action named by its canonical text, ts/dur in
/// microseconds, args {stage, microbatch, kind, step, exposed_comm_us}, cpu_us where
/// TimedAction::cpu > 0 and comm_cpu_us where TimedAction::comm_cpu > 0. A compute action with
/// communication inside (tensor-parallel collectives, offload transfers) also gets one "comm
/// <action>" event (cat "inner_comm") on tid 1 at the end of its span, as long as that
/// communication took.
std::string to_chrome_trace(const std::vector<TimedAction>& events, int world_size);

/// Parses to_chrome_trace's output back into events (metadata events are skipped).
/// Throws UserError naming the event index on a malformed trace.
std::vector<TimedAction> from_chrome_trace(const std::string& json);

/// Summary JSON: step_time_s, bubble_fraction, tokens_per_s, mfu (omitted when < 0), and
/// "ranks": [{rank, compute_s, comm_s, idle_s, peak_memory_bytes, model_state_bytes, memory_ok}].
std::string to_summary_json(const StepSummary& summary);

/// Parses to_summary_json's output back (ranks placed by their "rank" index, which must run
/// 0..N-1). Throws UserError naming the missing or malformed key.
StepSummary from_summary_json(const std::string& json);

}  // namespace dtwin::trace
