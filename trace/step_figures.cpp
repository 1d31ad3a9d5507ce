#include "trace/step_figures.hpp"

#include <cmath>

#include "models/cost/collective_bytes.hpp"
#include "models/cost/context_parallel.hpp"
#include "models/cost/encoder_parameters.hpp"
#include "models/cost/gradient_bucket_sizes.hpp"
#include "models/cost/memory_budget.hpp"
#include "models/cost/moe_layer.hpp"
#include "models/cost/schedule_memory.hpp"

namespace dtwin::trace {

void fill_step_figures(StepSummary& summary, const Scenario& scenario, const CostModel& cost) {
  const ClusterSpec& cluster = scenario.cluster;
  const double budget = tensor_memory_per_rank(cluster);
  for (RankSummary& rank : summary.ranks) rank.memory_ok = rank.peak_memory_bytes <= budget;
  summary.tokens_per_s = 0;
  summary.mfu = -1;
  if (summary.step_time_s <= 0) return;
  const double tokens =
      double(scenario.layout.dp_cp()) * scenario.layout.microbatches * cost.tokens_per_microbatch();
  summary.tokens_per_s = tokens / summary.step_time_s;
  const double peak = cluster.device.peak_flops * cluster.nodes * cluster.devices_per_node;
  if (peak > 0) summary.mfu = cost.model_flops_per_token() * summary.tokens_per_s / peak;
}

void fill_predicted_memory(StepSummary& summary, const sched::Schedule& schedule,
                           const CostModel& cost) {
  for (int rank = 0; rank < static_cast<int>(summary.ranks.size()); ++rank) {
    summary.ranks[rank].peak_memory_bytes = peak_memory_bytes(schedule, rank, cost);
    summary.ranks[rank].model_state_bytes = model_state_bytes(schedule, rank, cost);
  }
}

void fill_predicted_all_to_all(StepSummary& summary, const sched::Schedule& schedule,
                               const Scenario& scenario, const CostModel& cost) {
  const LayoutSpec& l = scenario.layout;
  if (l.ep == 1) return;
  summary.load_imbalance = scenario.model.moe.load_imbalance;
  summary.peak_load_imbalance = scenario.model.moe.peak_imbalance();
  ModelSpec mean = scenario.model;
  mean.moe.load_imbalance = 1;
  const double per_all_to_all =
      moe_all_to_all_bytes(mean, l, cost.tokens_per_microbatch(), cost.bytes_per_element());
  const int per_microbatch = l.recompute == Recompute::Full ? 6 : 4;
  const sched::Layout& layout = schedule.layout;
  for (int rank = 0; rank < static_cast<int>(summary.ranks.size()); ++rank) {
    int layers = 0;
    for (int v = 0; v < layout.virtual_stages; ++v)
      layers += cost.stage(layout.stage_of(layout.pipeline_rank(rank), v)).moe_layers;
    summary.ranks[rank].all_to_all_bytes =
        per_all_to_all * per_microbatch * layers * layout.microbatches;
  }
}

void fill_predicted_cp_exchange(StepSummary& summary, const sched::Schedule& schedule,
                                const Scenario& scenario, const CostModel& cost) {
  const LayoutSpec& l = scenario.layout;
  if (l.cp == 1) return;
  const auto pass = [&](bool backward) {
    return cp_exchange_bytes(scenario.model, l, cost.tokens_per_microbatch(),
                             cost.bytes_per_element(), backward);
  };
  const double per_layer = pass(false) * (l.recompute == Recompute::None ? 1 : 2) + pass(true);
  const sched::Layout& layout = schedule.layout;
  for (int rank = 0; rank < static_cast<int>(summary.ranks.size()); ++rank) {
    int layers = 0;
    for (int v = 0; v < layout.virtual_stages; ++v)
      layers += cost.stage(layout.stage_of(layout.pipeline_rank(rank), v)).num_layers;
    summary.ranks[rank].cp_exchange_bytes = per_layer * layers * layout.microbatches;
  }
}

namespace {

// The elements of each of stage `stage`'s gradient buckets, `elements` in all: an encoder's
// parameters bucketed as the runtime buckets them (gradient_bucket_sizes); a decoder's split
// evenly over the simulator's bucket count (its parameter tensors are the runtime's to know);
// one buffer without overlap_grad_reduce.
std::vector<int64_t> bucket_elements(const Scenario& scenario, const CostModel& cost, int stage,
                                     int64_t elements) {
  if (!scenario.layout.gradient_buckets()) return {elements};
  if (is_encoder(scenario.model.family)) {
    const std::vector<int64_t> numels = encoder_parameter_numels(scenario.model);
    std::vector<int64_t> buckets;
    auto next = numels.rbegin();
    for (const int count : gradient_bucket_sizes(numels, cost.bucket_params())) {
      int64_t sum = 0;
      for (int i = 0; i < count; ++i) sum += *next++;
      buckets.push_back(sum);
    }
    return buckets;
  }
  const int64_t count = even_bucket_count(scenario, cost, stage);
  std::vector<int64_t> buckets;
  for (int64_t k = 0; k < count; ++k)
    buckets.push_back(elements / count + (k < elements % count ? 1 : 0));
  return buckets;
}

}  // namespace

void fill_predicted_dp_bytes(StepSummary& summary, const sched::Schedule& schedule,
                             const Scenario& scenario, const CostModel& cost) {
  const sched::Layout& layout = schedule.layout;
  if (layout.dp == 1 || layout.zero > 0) return;
  const bool averaged = layout.dp_sync == sched::DpSync::WeightAverage;
  const auto element = static_cast<int64_t>(averaged ? 4 : cost.grad_bytes_per_element());
  for (int rank = 0; rank < static_cast<int>(summary.ranks.size()); ++rank) {
    const int replica = layout.dp_index(rank);
    WireBytes moved;
    for (int v = 0; v < layout.virtual_stages; ++v) {
      const int stage = layout.stage_of(layout.pipeline_rank(rank), v);
      const double bytes =
          (averaged ? cost.parameter_bytes(stage) : cost.data_parallel_gradient_bytes(stage)) /
          scenario.layout.tp;
      const auto elements = static_cast<int64_t>(std::llround(bytes / element));
      if (layout.dp_sync == sched::DpSync::GatherScatter) {
        moved += gather_bytes(elements * element, layout.dp, replica);
        moved += scatter_bytes(elements * element, layout.dp, replica);
        continue;
      }
      for (const int64_t bucket : bucket_elements(scenario, cost, stage, elements))
        moved += ring_allreduce_bytes(bucket * element, element, layout.dp, replica);
    }
    summary.ranks[rank].dp_sent_bytes = static_cast<double>(moved.sent);
    summary.ranks[rank].dp_received_bytes = static_cast<double>(moved.received);
  }
}

}  // namespace dtwin::trace
