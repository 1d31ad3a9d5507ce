// Executor's ZeRO actions over the data-parallel group (runtime/zero_stage.hpp): UNSHARD
// all-gathers the parameter shards, RESHARD releases the gathered parameters, REDUCE_GRAD
// reduce-scatters the gradients, each straight between the flat buffers. Each first all-gathers
// the replicas' start times (one float64 each), so that the exposed time leaves out waiting for a
// later replica, as ALLREDUCE's does.
#include "runtime/executor.hpp"

namespace dtwin::rt {

ZeroStage& Executor::zero_of(const sched::Action& a) {
  StageState& stage = stage_of(a);
  if (!stage.zero)
    throw std::logic_error("rank " + std::to_string(rank_) + ": " + sched::to_string(a) +
                           " needs sharded parameters, and layout.zero is 0");
  return *stage.zero;
}

double Executor::latest_start(double start, const std::string& what) {
  const int dp = schedule_.layout.dp;
  const auto options = torch::TensorOptions(torch::kFloat64).device(comm_.device());
  torch::Tensor mine = torch::full({1}, start, options);
  torch::Tensor all = torch::empty({dp}, options);
  const std::vector<int> peers = dp_peers();
  comm_.wait(
      comm_.post(what, peers, [&] { return comm_.data_parallel()._allgather_base(all, mine); }),
      what, peers);
  return all.max().item<double>();
}

double Executor::gather_parameters(ZeroStage& zero, const std::string& what) {
  const double arrival = latest_start(clock_.now(), what);
  // Under ZeRO 1 and 2 the shard is a slice of the buffer it is gathered into.
  torch::Tensor shard = zero.zero() == 3 ? zero.parameter_shard() : zero.parameter_shard().clone();
  zero.allocate_parameters();
  const std::vector<int> peers = dp_peers();
  comm_.wait(
      comm_.post(
          what, peers,
          [&] { return comm_.data_parallel()._allgather_base(zero.full_parameters(), shard); }),
      what, peers);
  return arrival;
}

void Executor::unshard(const sched::Action& a) {
  const double start = clock_.now();
  const double arrival = gather_parameters(zero_of(a), sched::to_string(a));
  exposed_ = std::max(0.0, clock_.now() - std::max(start, arrival));
}

void Executor::reshard(const sched::Action& a) {
  zero_of(a).release_parameters();
}

void Executor::reduce_gradients(const sched::Action& a) {
  if (buckets_.count(a.stage)) {
    finish_buckets(a);
    return;
  }
  ZeroStage& zero = zero_of(a);
  const std::string what = sched::to_string(a);
  const double start = clock_.now();
  const double arrival = latest_start(start, what);
  torch::Tensor shard = torch::empty({zero.shard_elements()}, zero.full_gradients().options());
  const std::vector<int> peers = dp_peers();
  wait(comm_.post(what, peers,
                  [&] {
                    return comm_.data_parallel()._reduce_scatter_base(shard, zero.full_gradients());
                  }),
       a, peers);
  zero.keep_gradient_shard(shard);
  exposed_ = std::max(0.0, clock_.now() - std::max(start, arrival));
}

void Executor::gather_all_parameters() {
  for (auto& [stage, state] : stages_)
    if (state.zero && state.zero->zero() == 3)
      gather_parameters(*state.zero, "the parameter gather of stage " + std::to_string(stage));
}

void Executor::release_all_parameters() {
  for (auto& [stage, state] : stages_)
    if (state.zero) state.zero->release_parameters();
}

std::vector<int> Executor::dp_peers() const {
  const sched::Layout& layout = schedule_.layout;
  std::vector<int> peers;
  for (int d = 0; d < layout.dp; ++d)
    if (d != layout.dp_index(rank_))
      peers.push_back(process_of(layout.group(d, layout.pipeline_rank(rank_))));
  return peers;
}

}  // namespace dtwin::rt
