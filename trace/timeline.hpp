// A timeline: when each action of a schedule ran on each rank, predicted or measured, and the
// Chrome-trace and summary forms that the simulator and the runtime both write.
#pragma once

#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "trace/timed_action.hpp"

namespace dtwin::trace {

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
  /// Bytes per step that one GPU's MoE all-to-alls send to the other members of its
  /// expert-parallel group (dispatch and combine, forward, backward and a full recomputation's
  /// forward): predicted (moe_all_to_all_bytes of models/cost/moe_layer.hpp per all-to-all), or
  /// counted by the runtime (mean over the summarised steps). 0 without expert parallelism.
  double all_to_all_bytes = 0;
  /// Bytes per step that one GPU sends to the next member of its context-parallel ring (keys,
  /// values and their gradients; cp_exchange_bytes of models/cost/context_parallel.hpp per layer
  /// and pass, a recomputed forward's again), predicted or counted by the runtime (mean over the
  /// summarised steps). 0 without context parallelism.
  double cp_exchange_bytes = 0;
  /// Bytes per step that one GPU sends to and receives from the other members of its DP group
  /// in the reductions of its dense gradients (ALLREDUCE: Gloo's ring all-reduce, or the gather
  /// to and scatter from replica 0, and the buckets' all-reduces;
  /// models/cost/collective_bytes.hpp), predicted or counted at the runtime's communicator (mean
  /// over the summarised steps). 0 with dp 1 and under ZeRO (not counted).
  double dp_sent_bytes = 0;
  double dp_received_bytes = 0;
  /// Measured only: the traffic per step of the rank's host interface (runtime/interface_counters:
  /// frames' bytes and frames each way, every protocol's headers and every other message
  /// included), when the rank is the only one on it; 0: unknown.
  double interface_sent_bytes = 0;
  double interface_received_bytes = 0;
  double interface_sent_packets = 0;
  double interface_received_packets = 0;
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
  /// Mixture of experts with layout.ep > 1: the busiest expert-parallel member's token copies
  /// over the members' mean in an MoE layer (dimensionless, >= 1): predicted, the scenario's
  /// model.moe.load_imbalance; measured, the mean over MoE layers and kept steps of the counted
  /// copies (rt::measured_load_imbalance). 0: none.
  double load_imbalance = 0;
  /// The same in the worst microbatch, a stage's MoE layers together, which sets a dropless
  /// rank's peak memory: predicted, MoeSpec::peak_imbalance(); measured, the largest over the
  /// run's microbatches and processes (rt::peak_member_imbalance). 0: none.
  double peak_load_imbalance = 0;
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

/// Chrome trace-event JSON (chrome://tracing, Perfetto), times in microseconds on a whole
/// nanosecond: pid = rank (its process_name "rank N"), one "X" event per action named by its
/// canonical text, args {stage, microbatch, kind, step, exposed_comm_us}, and cpu_us,
/// comm_cpu_us and memory_bytes (TimedAction::memory) where > 0. A compute action
/// with communication inside (tensor-parallel collectives, offload transfers) also gets one "comm
/// <action>" event (cat "inner_comm") at the end of its span, as long as that communication took.
/// Tracks (tids, named by thread_name; trace/chrome_tracks.hpp): 0 compute, then the rank's
/// data-parallel collectives, its inner communication and one per point-to-point channel, with
/// further lanes where a channel's slices overlap, so that no two slices of a track overlap. A
/// flow (cat "transfer": "s" inside the SEND's slice, "f" with "bp":"e" inside its RECV's, later,
/// one id) links each SEND to its RECV (sched::receiver_of, same step; chrome_tracks.hpp's
/// flows). A "memory" counter per rank (args {bytes}) samples TimedAction::peak_memory at each
/// action's start and TimedAction::memory at its end, where known, SENDs excepted (their span is
/// the transfer's), each change once. `layout` names the ranks (its group_count) and the SENDs'
/// receivers.
std::string to_chrome_trace(const std::vector<TimedAction>& events, const sched::Layout& layout);

/// Parses to_chrome_trace's output back into events: its "X" events but the inner_comm ones
/// (metadata, flow and counter events are skipped), without TimedAction::peak_memory. Throws
/// UserError naming the event index on a malformed trace.
std::vector<TimedAction> from_chrome_trace(const std::string& json);

/// Summary JSON: step_time_s, bubble_fraction, tokens_per_s, mfu (omitted when < 0), and
/// "ranks": [{rank, compute_s, comm_s, idle_s, peak_memory_bytes, model_state_bytes, memory_ok}].
std::string to_summary_json(const StepSummary& summary);

/// Parses to_summary_json's output back (ranks placed by their "rank" index, which must run
/// 0..N-1). Throws UserError naming the missing or malformed key.
StepSummary from_summary_json(const std::string& json);

}  // namespace dtwin::trace
