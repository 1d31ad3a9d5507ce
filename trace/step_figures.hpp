// The figures a step summary derives from its step time and peak memory: throughput, MFU and
// whether each rank fits its device. One rule for the simulator's and the runtime's summaries.
#pragma once

#include "models/cost/cost_model.hpp"
#include "models/spec/scenario.hpp"
#include "schedules/schedule.hpp"
#include "trace/timeline.hpp"

namespace dtwin::trace {

/// Fills `summary`'s tokens_per_s, mfu and every rank's memory_ok from its step_time_s (seconds)
/// and ranks[r].peak_memory_bytes (bytes), which the caller sets first.
///  - tokens per step = dp x cp x microbatches x tokens_per_microbatch (micro_batch_size x
///    seq_len / cp on each GPU of a context-parallel group), dp x microbatches x micro_batch_size
///    x seq_len;
///    tokens_per_s = tokens per step / step_time_s;
///  - mfu = model_flops_per_token x tokens_per_s / (peak_flops x nodes x devices_per_node),
///    model FLOPs per token as CostModel::model_flops_per_token (PaLM, appendix B);
///  - memory_ok: peak_memory_bytes <= tensor_memory_per_rank (models/cost/memory_budget.hpp).
/// With step_time_s <= 0, tokens_per_s stays 0 and mfu -1 (unknown).
void fill_step_figures(StepSummary& summary, const Scenario& scenario, const CostModel& cost);

/// Sets every rank's peak_memory_bytes and model_state_bytes (bytes) of `summary` from the walk
/// of `schedule` (models/cost/schedule_memory.hpp), one summary rank per schedule rank; the
/// simulator's prediction, which does not depend on its times.
void fill_predicted_memory(StepSummary& summary, const sched::Schedule& schedule,
                           const CostModel& cost);

/// Sets every rank's all_to_all_bytes (bytes per step) under expert parallelism: per MoE layer
/// on the rank's stages and microbatch, 4 all-to-alls (dispatch and combine in F and in the
/// backward; 6 with full recomputation, which repeats the forward's) of moe_all_to_all_bytes
/// each (models/cost/moe_layer.hpp) at load_imbalance 1: the bytes the mean rank sends. The
/// busiest rank receives ρ times the mean, which bounds an all-to-all's time, but the copies
/// leaving their rank are as many whichever rank they go to (with 2 members each sends all
/// that cross), so the runtime's count compares with the mean; and the summary's
/// load_imbalance, model.moe.load_imbalance. Nothing with layout.ep 1.
void fill_predicted_all_to_all(StepSummary& summary, const sched::Schedule& schedule,
                               const Scenario& scenario, const CostModel& cost);

/// Sets every rank's cp_exchange_bytes (bytes per step) under context parallelism: per layer on
/// the rank's stages and microbatch, cp_exchange_bytes of the forward and of the backward
/// (models/cost/context_parallel.hpp), and the forward's once more under selective or full
/// recomputation, which runs the attention again. Nothing with layout.cp 1.
void fill_predicted_cp_exchange(StepSummary& summary, const sched::Schedule& schedule,
                                const Scenario& scenario, const CostModel& cost);

/// Sets every rank's dp_sent_bytes and dp_received_bytes (bytes per step): per stage on the
/// rank, its ALLREDUCE's buffer, data_parallel_gradient_bytes (parameter_bytes under
/// weight-average) / tp, moved as Gloo moves it (models/cost/collective_bytes.hpp): a ring
/// all-reduce over the dp replicas, or a gather to and a scatter from replica 0
/// (gather-scatter); with layout.overlap_grad_reduce one ring all-reduce per bucket: an
/// encoder's parameters bucketed as the runtime buckets them (gradient_bucket_sizes), a
/// decoder's buffer split evenly over the simulator's bucket count (the runtime's buckets end at
/// its parameter tensors, so per rank the two may differ by the segments' rounding, a few
/// elements per bucket; summed over the replicas they are equal). Nothing with dp 1 or under
/// ZeRO.
void fill_predicted_dp_bytes(StepSummary& summary, const sched::Schedule& schedule,
                             const Scenario& scenario, const CostModel& cost);

}  // namespace dtwin::trace
