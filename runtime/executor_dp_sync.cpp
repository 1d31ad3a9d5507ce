// Executor::dp_sync: the ALLREDUCE action under the layout's dp_sync.
#include "runtime/executor.hpp"

#include "runtime/bucket_reductions.hpp"
#include "runtime/flat_gradients.hpp"

namespace dtwin::rt {

void Executor::dp_sync(const sched::Action& a) {
  const sched::Layout& layout = schedule_.layout;
  const int dp = layout.dp, replica = layout.dp_index(rank_);
  const std::vector<int> peers = dp_peers();

  const bool weights = layout.dp_sync == sched::DpSync::WeightAverage;
  if (buckets_.count(a.stage)) {
    finish_buckets(a);
    return;
  }
  const double begin = clock_.now();
  // Under expert parallelism each member holds other experts: only the dense parameters are
  // reduced over the data-parallel group (reduce_expert_gradients reduces the rest).
  const nn::StageModule& module = *stages_.at(a.stage).module;
  const bool experts_apart = scenario_.layout.ep > 1;
  const std::vector<torch::Tensor> tensors =
      sync_tensors(experts_apart ? module.expert_parameters(false) : module.parameters(), weights);
  torch::Tensor flat = flatten(tensors);
  const int64_t bytes = flat.numel() * flat.element_size();
  const double start = clock_.now();
  const std::string what = sched::to_string(a);
  // The replicas' start times go apart (one float64 each), so that the reduction carries the
  // gradients alone, bytes as the simulator predicts them.
  const double last_arrival = latest_start(start, what);

  c10d::Backend& group = comm_.data_parallel();
  if (layout.dp_sync == sched::DpSync::GatherScatter) {
    std::vector<std::vector<torch::Tensor>> gathered;
    if (replica == 0) {
      gathered.emplace_back();
      for (int d = 0; d < dp; ++d) gathered[0].push_back(torch::empty_like(flat));
    }
    std::vector<torch::Tensor> input{flat};
    c10d::GatherOptions gather_options;
    gather_options.rootRank = 0;
    wait(comm_.post(what, peers, [&] { return group.gather(gathered, input, gather_options); }), a,
         peers);
    std::vector<std::vector<torch::Tensor>> scattered;
    if (replica == 0) {
      const torch::Tensor sum = torch::stack(gathered[0]).sum(0);
      scattered.push_back(std::vector<torch::Tensor>(dp, sum));
    }
    std::vector<torch::Tensor> output{torch::empty_like(flat)};
    c10d::ScatterOptions scatter_options;
    scatter_options.rootRank = 0;
    wait(comm_.post(what, peers, [&] { return group.scatter(output, scattered, scatter_options); }),
         a, peers);
    flat = output[0];
    WireBytes moved = gather_bytes(bytes, dp, replica);
    moved += scatter_bytes(bytes, dp, replica);
    count_gradient_bytes(moved);
  } else {
    std::vector<torch::Tensor> buffers{flat};
    wait(comm_.post(what, peers, [&] { return group.allreduce(buffers); }), a, peers);
    count_gradient_bytes(ring_allreduce_bytes(bytes, flat.element_size(), dp, replica));
  }
  write_average(flat, dp, tensors);
  if (experts_apart) reduce_expert_gradients(a);
  // Exposed: the whole action, packing and writing back included, less the wait for a later
  // replica (the simulator runs the packing as the profile's sync_local seconds).
  exposed_ = std::max(0.0, clock_.now() - begin - std::max(0.0, last_arrival - start));
}

void Executor::count_gradient_bytes(const WireBytes& bytes) {
  gradient_sent_ += bytes.sent;
  gradient_received_ += bytes.received;
}

bool Executor::arm_buckets(const sched::Action& a, std::size_t index) {
  auto last = last_gradient_.find(a.stage);
  if (last == last_gradient_.end() || last->second != index) return false;
  const std::vector<int> peers = dp_peers();
  ZeroStage* zero = stage_of(a).zero.get();
  const sched::Action reduction{
      a.stage, zero ? sched::ActionKind::REDUCE_GRAD : sched::ActionKind::ALLREDUCE};
  const std::string what = sched::to_string(reduction);
  std::unique_ptr<BucketReduction> buckets;
  if (zero)
    buckets = std::make_unique<ReduceScatterBuckets>(
        *zero, [this, what, peers](auto& outputs, auto& inputs) {
          return comm_.post(what, peers,
                            [&] { return comm_.data_parallel().reduce_scatter(outputs, inputs); });
        });
  else
    buckets = std::make_unique<AllReduceBuckets>(
        [this, what, peers,
         replica = schedule_.layout.dp_index(rank_)](std::vector<torch::Tensor>& buffers) {
          const torch::Tensor& flat = buffers.front();
          count_gradient_bytes(ring_allreduce_bytes(flat.numel() * flat.element_size(),
                                                    flat.element_size(), schedule_.layout.dp,
                                                    replica));
          return comm_.post(what, peers, [&] { return comm_.data_parallel().allreduce(buffers); });
        },
        schedule_.layout.dp);
  buckets_.at(a.stage)->arm(std::move(buckets));
  return true;
}

void Executor::finish_buckets(const sched::Action& a) {
  const std::vector<int> peers = dp_peers();
  const double start = clock_.now();
  buckets_.at(a.stage)->finish([&](const auto& work) { wait(work, a, peers); });
  exposed_ = clock_.now() - start;
}

void Executor::reduce_expert_gradients(const sched::Action& a) {
  const std::vector<torch::Tensor> grads =
      sync_tensors(stages_.at(a.stage).module->expert_parameters(), /*weights=*/false);
  if (grads.empty()) return;
  torch::Tensor flat = flatten(grads);
  if (const auto& group = comm_.expert_data_parallel()) {
    const std::vector<int> peers = dp_peers();
    std::vector<torch::Tensor> buffers{flat};
    wait(comm_.post(sched::to_string(a), peers, [&] { return group->allreduce(buffers); }), a,
         peers);
  }
  // Summed over the expert data-parallel group, each member's gradient already covering the
  // microbatches of its whole expert-parallel group: over dp replicas' microbatches in all, as
  // the dense gradients are averaged (Megatron-Core scales expert gradients by edp/dp alike).
  copy_slices(flat.div_(schedule_.layout.dp), grads);
}

}  // namespace dtwin::rt
