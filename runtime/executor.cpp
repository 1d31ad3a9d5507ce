#include "runtime/executor.hpp"

#include <algorithm>
#include <chrono>

#include "base/splitmix64.hpp"
#include "models/nn/tensor_parallel.hpp"
#include "runtime/fault_injection.hpp"
#include "runtime/flat_gradients.hpp"
#include "runtime/make_action_timer.hpp"
#include "runtime/peak_memory.hpp"
#include "schedules/send_release.hpp"
#include "schedules/transfer.hpp"

#if DTWIN_HAVE_CUDA
#include "runtime/cuda/captured_passes.hpp"
#endif

namespace dtwin::rt {
namespace {

using sched::Action;
using sched::ActionKind;

// map[key], which action `a` of `rank` needs; throws std::logic_error "rank R: A needs WHAT,
// which this rank does not hold" when it is missing (a schedule the executor cannot run).
template <typename Map>
typename Map::mapped_type& held(Map& map, const typename Map::key_type& key, int rank,
                                const Action& a, const std::string& what) {
  auto it = map.find(key);
  if (it == map.end())
    throw std::logic_error("rank " + std::to_string(rank) + ": " + sched::to_string(a) + " needs " +
                           what + ", which this rank does not hold");
  return it->second;
}

// Removes map[key] and returns it; throws as held().
template <typename Map>
typename Map::mapped_type take(Map& map, const typename Map::key_type& key, int rank,
                               const Action& a, const std::string& what) {
  typename Map::mapped_type value = std::move(held(map, key, rank, a, what));
  map.erase(key);
  return value;
}

// "the output of 1F3": what the action of `kind` on a's (stage, microbatch) produced.
std::string of(const std::string& what, ActionKind kind, const Action& a) {
  return what + " of " + sched::to_string({a.stage, kind, a.microbatch});
}

// "the output gradient of stage 1 microbatch 3", whichever action produced it.
std::string of_microbatch(const std::string& what, const Action& a) {
  return what + " of stage " + std::to_string(a.stage) + " microbatch " +
         std::to_string(a.microbatch);
}

}  // namespace

Executor::Executor(const Scenario& scenario, const StagePartition& partition,
                   const sched::Schedule& schedule, int process, std::map<int, StageState>& stages,
                   Communicator& comm, const TrainingData& data, const RunClock& clock)
    : scenario_(scenario),
      schedule_(schedule),
      rank_(schedule.layout.group_of(process)),
      tp_index_(schedule.layout.tp_index(process)),
      stages_(stages),
      comm_(comm),
      data_(data),
      clock_(clock),
      device_(comm.device()),
      timer_(make_action_timer(device_, clock)),
      handlers_{{ActionKind::F, &Executor::forward},
                {ActionKind::B, &Executor::backward},
                {ActionKind::I, &Executor::input_backward},
                {ActionKind::W, &Executor::weight_backward},
                {ActionKind::SEND_F, &Executor::send},
                {ActionKind::SEND_B, &Executor::send},
                {ActionKind::RECV_F, &Executor::receive},
                {ActionKind::RECV_B, &Executor::receive},
                {ActionKind::ALLREDUCE, &Executor::dp_sync},
                {ActionKind::UNSHARD, &Executor::unshard},
                {ActionKind::RESHARD, &Executor::reshard},
                {ActionKind::REDUCE_GRAD, &Executor::reduce_gradients},
                {ActionKind::OPTIM, &Executor::optimizer_step}},
      send_release_(sched::send_release_points(schedule, rank_)) {
  if (scenario.runtime.cuda_graphs) {
#if DTWIN_HAVE_CUDA
    graphs_ = std::make_unique<cuda::CapturedPasses>(*stages_.at(0).module);
#else
    throw std::logic_error("runtime.cuda_graphs in a build without CUDA (DTWIN_CUDA=OFF)");
#endif
  }
  if (!scenario.layout.gradient_buckets()) return;
  const sched::ActionList& actions = schedule.ranks.at(rank_);
  for (std::size_t i = 0; i < actions.size(); ++i)
    if (actions[i].kind == ActionKind::B || actions[i].kind == ActionKind::W)
      last_gradient_[actions[i].stage] = i;
  for (auto& [stage, state] : stages_)
    buckets_[stage] =
        std::make_unique<GradientBuckets>(state.module->parameters(), partition.bucket_params);
}

Executor::StepResult Executor::run_step(int64_t step) {
  step_ = step;
  events_.clear();
  loss_sum_ = torch::zeros({}, torch::TensorOptions(torch::kFloat64).device(device_));
  loss_count_ = 0;
  timer_->begin_step();
  const sched::ActionList& actions = schedule_.ranks.at(rank_);
  for (std::size_t index = 0; index < actions.size(); ++index) {
    const Action& a = actions[index];
    auto handler = handlers_.find(a.kind);
    if (handler == handlers_.end())
      throw std::logic_error("no handler for action " + sched::to_string(a));
    exposed_ = 0;
    inject_fault(sched::kind_name(a.kind), step + 1);
    const double start = clock_.now();
    timer_->start(index);
    const bool armed = arm_buckets(a, index);
    // A pass's tensor-parallel collectives are its inner communication, as the simulator counts
    // them.
    const nn::TensorParallelGroup* tp =
        sched::is_compute(a.kind) ? &stage_of(a).module->tensor_parallel() : nullptr;
    const double collectives_start = tp ? tp->collective_seconds() : 0;
    const double helper_start = tp ? tp->collective_helper_cpu_seconds() : 0;
    (this->*handler->second)(a);
    if (tp) exposed_ += tp->collective_seconds() - collectives_start;
    if (armed) buckets_.at(a.stage)->post_remaining();  // a W's deferred weights, unused ones
    timer_->end(index);
    events_.push_back({rank_, a, static_cast<int>(step), start, clock_.now(), exposed_});
    if (tp && device_.is_cpu())
      events_.back().comm_cpu = tp->collective_helper_cpu_seconds() - helper_start;
    // A send that this receive proves delivered is waited for now, without blocking, and its
    // message freed (sched::send_release_points).
    std::erase_if(sends_, [&](const PendingSend& pending) {
      if (send_release_[pending.event] != static_cast<int>(index)) return false;
      finish_send(pending);
      return true;
    });
    events_.back().memory = live_memory_bytes(scenario_.runtime.device);
  }
  // Gloo completes a send only when its sender waits for it, so the sends that no receive
  // proved delivered are waited for here, at the end of the step (write_measured later ends
  // each SEND when its receiver got it).
  for (const PendingSend& pending : sends_) finish_send(pending);
  sends_.clear();
  timer_->finish_step(events_);
  inputs_.clear();
  outputs_.clear();
  activations_.clear();
  gradients_.clear();
  input_grads_.clear();
  stashes_.clear();
  return {events_, loss_count_ > 0 ? loss_sum_.item<double>() : 0, loss_count_};
}

void Executor::finish_send(const PendingSend& pending) {
  const double start = clock_.now();
  for (const auto& work : pending.works) wait(work, events_[pending.event].action, {pending.peer});
  trace::TimedAction& event = events_[pending.event];
  event.end = clock_.now();
  event.exposed_comm = event.end - start;
}

void Executor::wait(c10::intrusive_ptr<c10d::Work> work, const Action& a,
                    const std::vector<int>& peers) {
  comm_.wait(work, sched::to_string(a), peers);
}

StageState& Executor::stage_of(const Action& a) {
  return held(stages_, a.stage, rank_, a, "the module of stage " + std::to_string(a.stage));
}

void Executor::prepare_compute(const Action& a) {
  StageState& stage = stage_of(a);
  if (!stage.zero) return;
  if (!stage.zero->gathered())
    throw std::logic_error("rank " + std::to_string(rank_) + ": " + sched::to_string(a) +
                           " needs the stage's gathered parameters, and no UNSHARD precedes it");
  if (a.kind != ActionKind::F) stage.zero->prepare_gradients();
}

void Executor::forward(const Action& a) {
  prepare_compute(a);
  StageState& stage = stage_of(a);
  const Key key{a.stage, a.microbatch};
  const sched::Layout& layout = schedule_.layout;
  const LayoutSpec& spec = scenario_.layout;
  const bool first = a.stage == 0, last = a.stage == layout.num_stages() - 1;
  Batch batch;
  if (first || last) {
    // The schedule's DP index is dp_index·cp + cp_index: the members of a context-parallel
    // group read their replica's sequences and keep their own tokens of each.
    const nn::ContextParallelGroup& cp = stage.module->context_parallel();
    batch = data_.batch(step_, layout.dp_index(rank_) / spec.cp, a.microbatch, spec.dp,
                        layout.microbatches, spec.micro_batch_size, scenario_.training.seed);
    batch.inputs = nn::context_parallel_shard(batch.inputs, cp).to(device_);
    batch.targets = nn::context_parallel_shard(batch.targets, cp).to(device_);
  }
  torch::Tensor input;
  if (first) {
    input = batch.inputs;
  } else {
    input = take(activations_, key, rank_, a, of_microbatch("the input activation", a))
                .detach()
                .requires_grad_(true);
    inputs_[key] = input;
  }
  if (is_encoder(scenario_.model.family)) {
    // Dropout masks drawn from a generator seeded by the microbatch's place in the global batch,
    // so that any split of the batch over replicas and microbatches draws the same masks.
    const std::uint64_t global =
        static_cast<std::uint64_t>(step_) * spec.dp * layout.microbatches +
        static_cast<std::uint64_t>(layout.dp_index(rank_)) * layout.microbatches +
        static_cast<std::uint64_t>(a.microbatch);
    torch::manual_seed(splitmix64(scenario_.training.seed ^ splitmix64(global)));
  }
  torch::Tensor output = graphs_
                             ? graphs_->forward(step_, input, batch.targets)
                             : stage.module->forward(input, last ? batch.targets : torch::Tensor());
  if (last) {
    loss_sum_ += output.detach().to(torch::kFloat64);
    ++loss_count_;
  } else if (local_stage(a.stage + 1)) {
    activations_[{a.stage + 1, a.microbatch}] = output;
  }
  outputs_[key] = output;
}

void Executor::run_backward(const Action& a, bool split) {
  prepare_compute(a);
  const Key key{a.stage, a.microbatch};
  const bool last = a.stage == schedule_.layout.num_stages() - 1;
  torch::Tensor output = take(outputs_, key, rank_, a, of("the output", ActionKind::F, a));
  {
    nn::StashGuard guard(stage_of(a).module->stash_slot(), split ? &stashes_[key] : nullptr);
    if (last && graphs_) {
      graphs_->backward(output, 1.0 / schedule_.layout.microbatches);
    } else if (last) {
      (output / schedule_.layout.microbatches).backward();
    } else {
      output.backward(take(gradients_, key, rank_, a, of_microbatch("the output gradient", a)));
    }
  }
  if (a.stage == 0) return;
  torch::Tensor grad = take(inputs_, key, rank_, a, of("the input", ActionKind::F, a)).grad();
  if (local_stage(a.stage - 1))
    gradients_[{a.stage - 1, a.microbatch}] = grad;
  else
    input_grads_[key] = grad;
}

void Executor::backward(const Action& a) {
  run_backward(a, false);
}
void Executor::input_backward(const Action& a) {
  run_backward(a, true);
}

void Executor::weight_backward(const Action& a) {
  prepare_compute(a);
  const Key key{a.stage, a.microbatch};
  take(stashes_, key, rank_, a, of("the weight-gradient stash", ActionKind::I, a)).apply();
}

int Executor::peer_rank(const Action& a) const {
  return sched::peer_of(schedule_.layout, rank_, a).rank;
}

Executor::Works Executor::transfer(const Action& a, const std::vector<torch::Tensor>& message) {
  const sched::Layout& layout = schedule_.layout;
  const int peer = peer_rank(a);
  const int group_rank = layout.pipeline_rank(peer);
  const bool send = sched::is_send(a.kind);
  const sched::Channel c = sched::channel_of(layout, rank_, a);
  c10d::Backend& channel = comm_.pipeline_channel(
      c.gradients, layout.pipeline_rank(c.sender) < layout.pipeline_rank(c.receiver));
  Works works;
  for (size_t i = 0; i < message.size(); ++i) {
    std::vector<torch::Tensor> tensors{message[i]};
    const int tag = sched::transfer_tag(layout, a) + int(i) * sched::transfer_tag_count(layout);
    works.push_back(comm_.post(sched::to_string(a), {process_of(peer)}, [&] {
      return send ? channel.send(tensors, group_rank, tag) : channel.recv(tensors, group_rank, tag);
    }));
  }
  return works;
}

void Executor::send(const Action& a) {
  const Key key{a.stage, a.microbatch};
  torch::Tensor tensor;
  if (a.kind == ActionKind::SEND_F) {
    tensor = held(outputs_, key, rank_, a, of("the output", ActionKind::F, a)).detach();
  } else {
    tensor = take(input_grads_, key, rank_, a, of_microbatch("the input gradient", a));
  }
  std::vector<torch::Tensor> message{tensor.contiguous()};
  if (device_.is_cpu()) message.push_back(torch::full({1}, clock_.now(), torch::kFloat64));
  sends_.push_back({transfer(a, message), message, events_.size(), process_of(peer_rank(a))});
}

void Executor::receive(const Action& a) {
  const LayoutSpec& spec = scenario_.layout;
  // The tokens of one member: seq_len / cp, split over tp under sequence parallelism.
  const int64_t sequence =
      scenario_.model.seq_len / spec.cp / (spec.sequence_parallel ? spec.tp : 1);
  std::vector<torch::Tensor> message{
      torch::empty({spec.micro_batch_size, sequence, scenario_.model.d_model},
                   torch::TensorOptions(stage_of(a).module->compute_dtype()).device(device_))};
  if (device_.is_cpu()) message.push_back(torch::empty({1}, torch::kFloat64));
  const double start = clock_.now();
  for (const auto& work : transfer(a, message)) wait(work, a, {process_of(peer_rank(a))});
  if (device_.is_cpu()) {
    const double posted = message[1].item<double>();
    exposed_ = std::max(0.0, clock_.now() - std::max(start, posted));
  }
  const Key key{a.stage, a.microbatch};
  if (a.kind == ActionKind::RECV_F)
    activations_[key] = message[0];
  else
    gradients_[key] = message[0];
}

void Executor::sum_sequence_parallel_gradients(const Action& a) {
  StageState& stage = stage_of(a);
  const nn::StageModule& module = *stage.module;
  if (!module.tensor_parallel().sequence_parallel) return;
  const std::vector<torch::Tensor> replicated = module.replicated_parameters();
  // After the DP reduction (as Megatron-LM's finalize_model_grads sums; the two sums commute):
  // under ZeRO only this replica's shard holds the reduced gradients.
  const bool sharded = stage.zero != nullptr;
  const std::vector<torch::Tensor> gradients =
      sharded ? stage.zero->gradient_shard_views(replicated) : std::vector<torch::Tensor>{};
  if (sharded && gradients.empty()) return;  // alike on every member: same shard, same layout
  std::vector<torch::Tensor> flat{sharded ? torch::cat(gradients) : flat_gradients(replicated)};
  std::vector<int> peers;
  for (int t = 0; t < schedule_.layout.tp; ++t)
    if (t != tp_index_) peers.push_back(schedule_.layout.rank_of(rank_, t));
  wait(comm_.post(sched::to_string(a), peers,
                  [&] { return module.tensor_parallel().backend->allreduce(flat); }),
       a, peers);
  if (sharded)
    copy_slices(flat[0], gradients);
  else
    set_gradients(replicated, flat[0]);
}

void Executor::optimizer_step(const Action& a) {
  sum_sequence_parallel_gradients(a);
  StageState& stage = stage_of(a);
  double held = 0;
  for (const auto& [s, state] : stages_) held += static_cast<double>(model_state_bytes(state));
  peak_model_state_bytes_ = std::max(peak_model_state_bytes_, held);
  if (stage.zero) {
    stage.zero->step();
    return;
  }
  stage.optimizer->step();
  // Zeroed, not freed: the gradients stay allocated between steps, as Megatron-LM's gradient
  // buffers do and the memory model counts them (models/cost/schedule_memory.hpp); freed, GPipe's
  // first backward would run without them.
  stage.optimizer->zero_grad(/*set_to_none=*/false);
}

}  // namespace dtwin::rt
