// Predicted versus measured: the figures `dtwin compare` reports for the simulated steps (the
// prediction: one step, or the mean of sampled steps) against the steps a run measured, on the
// same schedule.
//
// compare.json (to_compare_json) holds, with times in seconds and relative errors as
// (predicted - measured) / measured (null where measured is 0 and predicted is not):
//   "world_size"            ranks of both timelines
//   "predicted_steps"       simulated steps (1, or the sampled steps of SimOptions::steps)
//   "measured_steps"        measured steps compared (after the warm-up step is dropped)
//   "dropped_first_step"    true when the first measured step was left out as warm-up
//   "step_time"             {predicted_s, measured_s, error_s, relative_error, predicted_std_s,
//                           measured_std_s}; each side's mean over its (kept) steps of each
//                           step's latest end - earliest start, and their standard deviation
//   "bubble"                {predicted_fraction, measured_fraction, difference_pp}, the mean
//                           over ranks of idle / step time; difference in percentage points
//   "ranks"                 [{rank, predicted: {compute_s, comm_s, idle_s}, measured: {...},
//                           difference: {...}}], comm_s being exposed communication and
//                           difference predicted - measured
//   "gap"                   {busy_s, idle_s}: the step-time error split into the mean over ranks
//                           of the busy (compute + exposed communication) and the idle errors;
//                           busy_s + idle_s = step_time.error_s unless idle was clamped at 0
//   "kinds"                 [{kind, count_per_step, predicted_mean_s, measured_mean_s, error_s,
//                           relative_error, total_error_s, predicted_blocking_mean_s,
//                           measured_blocking_mean_s, blocking_error_s, gap_share_s, share}] for
//                           the kinds the schedule has, in ActionKind order. *_mean_s: the mean
//                           duration of one action; total_error_s = count_per_step x error_s,
//                           summed over all ranks. *_blocking_mean_s: the mean time one action
//                           blocks its rank (its duration for F, B, I, W and OPTIM, its exposed
//                           transfer time for communication); blocking_error_s = count_per_step
//                           x their difference; gap_share_s = blocking_error_s / world_size, the
//                           kind's part of gap.busy_s (they sum to it); share = |blocking_error_s|
//                           / the sum of |blocking_error_s| over kinds
//                           and, for kinds with mean_cpu_s, predicted_ and measured_ cpu_mean_s,
//                           core_wait_mean_s, inner_comm_mean_s and comm_cpu_mean_s
//   "cores"                 {cpu_error_s, core_wait_error_s, inner_comm_error_s} (core_error_s;
//                           only when a kind has CPU times)
//   "top_actions"           the ten (rank, action) with the largest |error_s|: [{rank, action,
//                           predicted_s, measured_s, error_s, relative_error}], measured_s being
//                           the mean over the kept steps
//   "memory"                [{rank, predicted_bytes, measured_bytes, relative_error}] (only when
//                           both summaries were given)
//   "all_to_all"            the same for the MoE all-to-all bytes per step (only when both
//                           summaries were given and one has any)
//   "cp_exchange"           the same for the context-parallel ring's bytes per step
//   "dp_bytes"              [{rank, predicted_sent_bytes, counted_sent_bytes,
//                           predicted_received_bytes, counted_received_bytes} and, where the
//                           rank's host interface was read, interface_sent_bytes,
//                           interface_received_bytes, interface_sent_packets and
//                           interface_received_packets]: the data-parallel gradients' bytes per
//                           step (RankSummary::dp_sent_bytes; only when a summary has some)
//   "load_imbalance"        {predicted, measured, relative_error}: the busiest expert-parallel
//                           member's copies over the mean (only when both summaries have it)
//   "peak_load_imbalance"   the same in the worst microbatch (sets dropless peak memory)
//   "explaining_kinds"      the kinds that explain most of the step-time gap (explain_gap)
//   "where_the_prediction_misses"  explain_gap's paragraph
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedules/action.hpp"
#include "trace/timeline.hpp"

namespace dtwin::trace {

/// A predicted figure, its measured counterpart, predicted - measured and the relative error.
struct Figure {
  double predicted = 0;
  double measured = 0;
  double error() const { return predicted - measured; }
  /// (predicted - measured) / measured; 0 when both are 0, NaN when only measured is 0.
  double relative_error() const;
};

/// One rank's step totals, in seconds per step.
struct RankComparison {
  int rank = 0;
  Figure compute_s, comm_s, idle_s;  ///< comm_s: exposed communication
};

/// One action kind's durations, in seconds.
struct KindComparison {
  ActionKind kind = ActionKind::F;
  int count_per_step = 0;  ///< actions of this kind in one step, over all ranks
  Figure mean_s;           ///< mean duration of one action (measured: over kept steps too)
  /// Mean time one action blocks its rank: the duration for F, B, I, W and OPTIM, the exposed
  /// transfer time for communication (a send runs in the background; waiting for a peer is
  /// idle time, the consequence of errors elsewhere).
  Figure mean_blocking_s;
  /// Where both timelines carry TimedAction::cpu on every action of the kind (compute on a CPU
  /// device, one thread per rank): the mean seconds one action ran on a core, and the mean
  /// seconds of communication inside it (exposed_comm: tensor-parallel collectives), and the
  /// mean CPU seconds its collectives' helper threads ran (TimedAction::comm_cpu). Empty
  /// otherwise.
  std::optional<Figure> mean_cpu_s, mean_inner_comm_s, mean_comm_cpu_s;
  /// The rest of mean_s where mean_cpu_s is known: the mean seconds one action waited for a core.
  std::optional<Figure> mean_core_wait_s() const;
  /// count_per_step x mean_s.error(): the summed duration error of this kind per step.
  double total_error_s() const { return count_per_step * mean_s.error(); }
  /// count_per_step x mean_blocking_s.error(): the summed blocking-time error per step.
  double blocking_error_s() const { return count_per_step * mean_blocking_s.error(); }
};

/// One (rank, action)'s duration, in seconds.
struct ActionComparison {
  int rank = 0;
  std::string action;  ///< canonical text, e.g. "1B3"
  Figure duration_s;   ///< measured: mean over the kept steps
};

/// A per-rank byte figure: peak memory, or all-to-all bytes per step.
struct ByteComparison {
  int rank = 0;
  Figure bytes;
};

/// A rank's data-parallel gradient bytes per step: predicted against counted at the runtime's
/// communicator, each way, and the host interface's traffic (RankSummary's interface_ figures, 0
/// where unknown).
struct WireComparison {
  int rank = 0;
  Figure sent;
  Figure received;
  double interface_sent_bytes = 0;
  double interface_received_bytes = 0;
  double interface_sent_packets = 0;
  double interface_received_packets = 0;
};

/// Everything compare.json and report.md say; times in seconds (see the top of this header).
struct Comparison {
  int world_size = 0;
  int predicted_steps = 1;  ///< simulated steps
  int measured_steps = 0;   ///< kept measured steps
  bool dropped_first_step = false;
  Figure step_time_s;
  /// Standard deviation of the kept measured steps' times (seconds; 0 for one step): how far
  /// one step strays from step_time_s.measured. Its standard error is this / sqrt(measured_steps).
  double measured_step_std_s = 0;
  /// Standard deviation of the simulated steps' times (seconds; 0 for one step).
  double predicted_step_std_s = 0;
  Figure bubble_fraction;  ///< error() * 100 is the difference in percentage points
  std::vector<RankComparison> ranks;
  std::vector<KindComparison> kinds;          ///< kinds present in the schedule, in enum order
  std::vector<ActionComparison> top_actions;  ///< up to 10, largest |error| first
  std::vector<ByteComparison> memory;  ///< peak bytes; empty unless both summaries were given
  /// Bytes per step sent by the MoE all-to-alls (RankSummary::all_to_all_bytes); empty unless
  /// both summaries were given and one of them has any.
  std::vector<ByteComparison> all_to_all;
  /// Bytes per step sent around the context-parallel ring (RankSummary::cp_exchange_bytes);
  /// empty unless a summary has some.
  std::vector<ByteComparison> cp_exchange;
  /// RankSummary::dp_sent_bytes and the rest, per rank; empty unless both summaries were given
  /// and one of them has any.
  std::vector<WireComparison> dp_bytes;
  /// StepSummary::load_imbalance, the scenario's against the counted; only when both summaries
  /// have one.
  std::optional<Figure> load_imbalance;
  /// StepSummary::peak_load_imbalance likewise.
  std::optional<Figure> peak_load_imbalance;

  /// Mean over ranks of the compute + exposed communication error. busy_error_s() +
  /// idle_error_s() = step_time_s.error() unless a rank's idle time was clamped at 0.
  double busy_error_s() const;
  /// Mean over ranks of the idle-time error.
  double idle_error_s() const;
  /// A kind's part of busy_error_s(): blocking_error_s() / world_size (they sum to it).
  double gap_share_s(const KindComparison& kind) const;
  /// Over the kinds with mean_cpu_s, per step and rank, each the sum of count_per_step x the
  /// mean's error / world_size: their duration error split in three. Empty when no kind has it.
  struct CoreErrors {
    double cpu_s = 0;         ///< time on a core
    double wait_s = 0;        ///< time waiting for a core
    double inner_comm_s = 0;  ///< communication inside the actions
  };
  std::optional<CoreErrors> core_error_s() const;
};

/// Compares the predicted steps (`predicted`: one step, or sampled steps whose means are the
/// prediction, none dropped) with a measured run (`measured`, any number of steps; the first is
/// dropped as warm-up when there are more). Peak memory comes from the summaries when both are
/// given.
///
/// Throws UserError when the two timelines do not describe the same schedule: a
/// different set of ranks ("predicted has 3 ranks, measured 4: measured rank 3 is missing from
/// the prediction"), or a kept measured step whose actions on a rank differ from the predicted
/// multiset of the first predicted step ("rank 1 ran 1F3 in measured step 4 but the prediction
/// has no such action"; likewise for a predicted step that differs); also for an empty
/// timeline, ranks that are not 0..N-1, or a summary whose rank count differs from the traces'.
Comparison compare_timelines(const std::vector<TimedAction>& predicted,
                             const std::vector<TimedAction>& measured,
                             const StepSummary* predicted_summary = nullptr,
                             const StepSummary* measured_summary = nullptr);

/// The kinds that explain most of the step-time gap: those whose blocking_error_s has the gap's
/// sign, largest first, until they cover 80% of those kinds' sum (at most three). Empty when
/// the step times agree.
std::vector<ActionKind> explaining_kinds(const Comparison& comparison);

/// One paragraph, "where the prediction misses": the step-time gap and the kinds that explain it.
std::string explain_gap(const Comparison& comparison);

/// compare.json, the keys listed at the top of this header.
std::string to_compare_json(const Comparison& comparison);

/// report.md: headline, per-rank, per-kind, top-ten and memory tables and explain_gap's paragraph.
std::string to_markdown_report(const Comparison& comparison, const std::string& title);

/// The compact stdout table: step time and the measured steps' standard deviation, bubble and
/// per-kind errors.
std::string format_compare_table(const Comparison& comparison, const std::string& title);

}  // namespace dtwin::trace
