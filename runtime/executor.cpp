#include "runtime/executor.hpp"

#include <algorithm>
#include <chrono>

#include "schedules/transfer.hpp"

namespace dtwin::rt {
namespace {

using sched::Action;
using sched::ActionKind;

}  // namespace

Executor::Executor(const Scenario& scenario, const sched::Schedule& schedule, int rank,
                   std::map<int, StageState>& stages, Communicator& comm, const TokenDataset& data,
                   const RunClock& clock)
    : scenario_(scenario),
      schedule_(schedule),
      rank_(rank),
      stages_(stages),
      comm_(comm),
      data_(data),
      clock_(clock),
      handlers_{{ActionKind::F, &Executor::forward},
                {ActionKind::B, &Executor::backward},
                {ActionKind::I, &Executor::input_backward},
                {ActionKind::W, &Executor::weight_backward},
                {ActionKind::SEND_F, &Executor::send},
                {ActionKind::SEND_B, &Executor::send},
                {ActionKind::RECV_F, &Executor::receive},
                {ActionKind::RECV_B, &Executor::receive},
                {ActionKind::ALLREDUCE, &Executor::dp_sync},
                {ActionKind::OPTIM, &Executor::optimizer_step}} {}

Executor::StepResult Executor::run_step(int64_t step) {
  step_ = step;
  events_.clear();
  loss_sum_ = 0;
  loss_count_ = 0;
  for (const Action& a : schedule_.ranks.at(rank_)) {
    auto handler = handlers_.find(a.kind);
    if (handler == handlers_.end())
      throw std::logic_error("no handler for action " + sched::to_string(a));
    exposed_ = 0;
    const double start = clock_.now();
    (this->*handler->second)(a);
    events_.push_back({rank_, a, static_cast<int>(step), start, clock_.now(), exposed_});
  }
  // Gloo completes a send only when its sender waits for it, so the sends are waited for here,
  // at the end of the step, each charged with its own wait (write_measured later ends each
  // SEND when its receiver got it).
  for (PendingSend& pending : sends_) {
    const double start = clock_.now();
    wait(pending.work, events_[pending.event].action, {pending.peer});
    trace::TimedAction& event = events_[pending.event];
    event.end = clock_.now();
    event.exposed_comm = event.end - start;
  }
  sends_.clear();
  inputs_.clear();
  outputs_.clear();
  activations_.clear();
  gradients_.clear();
  input_grads_.clear();
  stashes_.clear();
  return {events_, loss_sum_, loss_count_};
}

void Executor::wait(c10::intrusive_ptr<c10d::Work> work, const Action& a,
                    const std::vector<int>& peers) {
  comm_.wait(work, sched::to_string(a), peers);
}

void Executor::forward(const Action& a) {
  StageState& stage = stages_.at(a.stage);
  const Key key{a.stage, a.microbatch};
  const sched::Layout& layout = schedule_.layout;
  const LayoutSpec& spec = scenario_.layout;
  const bool first = a.stage == 0, last = a.stage == layout.num_stages() - 1;
  Batch batch;
  if (first || last)
    batch = data_.batch(step_, layout.dp_index(rank_), a.microbatch, layout.dp, layout.microbatches,
                        spec.micro_batch_size, scenario_.training.seed);
  torch::Tensor input;
  if (first) {
    input = batch.inputs;
  } else {
    input = activations_.at(key).detach().requires_grad_(true);
    activations_.erase(key);
    inputs_[key] = input;
  }
  torch::Tensor output = stage.module->forward(input, last ? batch.targets : torch::Tensor());
  if (last) {
    loss_sum_ += output.item<double>();
    ++loss_count_;
  } else if (local_stage(a.stage + 1)) {
    activations_[{a.stage + 1, a.microbatch}] = output;
  }
  outputs_[key] = output;
}

void Executor::run_backward(const Action& a, bool split) {
  const Key key{a.stage, a.microbatch};
  const bool last = a.stage == schedule_.layout.num_stages() - 1;
  torch::Tensor output = outputs_.at(key);
  outputs_.erase(key);
  {
    nn::StashGuard guard(split ? &stashes_[key] : nullptr);
    if (last) {
      (output / schedule_.layout.microbatches).backward();
    } else {
      output.backward(gradients_.at(key));
      gradients_.erase(key);
    }
  }
  if (a.stage == 0) return;
  torch::Tensor grad = inputs_.at(key).grad();
  inputs_.erase(key);
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
  const Key key{a.stage, a.microbatch};
  stashes_.at(key).apply();
  stashes_.erase(key);
}

// Messages carry the tensor and, in one extra element, the time the sender posted it, so that
// the receiver can split its wait into idle time and exposed communication.
void Executor::send(const Action& a) {
  const Key key{a.stage, a.microbatch};
  torch::Tensor tensor;
  if (a.kind == ActionKind::SEND_F) {
    tensor = outputs_.at(key).detach();
  } else {
    tensor = input_grads_.at(key);
    input_grads_.erase(key);
  }
  torch::Tensor buffer = torch::empty({tensor.numel() + 1}, tensor.options());
  buffer.narrow(0, 0, tensor.numel()).copy_(tensor.reshape(-1));
  buffer[tensor.numel()] = clock_.now();
  std::vector<torch::Tensor> tensors{buffer};
  const sched::Layout& layout = schedule_.layout;
  const int peer_rank = sched::peer_of(layout, rank_, a).rank;
  const int peer = layout.pipeline_rank(peer_rank);
  const int tag = sched::transfer_tag(layout, a);
  auto work = comm_.post(sched::to_string(a), {peer_rank},
                         [&] { return comm_.pipeline().send(tensors, peer, tag); });
  sends_.push_back({work, buffer, events_.size(), peer_rank});
}

void Executor::receive(const Action& a) {
  const LayoutSpec& spec = scenario_.layout;
  const int64_t numel =
      int64_t(spec.micro_batch_size) * scenario_.model.seq_len * scenario_.model.d_model;
  torch::Tensor buffer = torch::empty({numel + 1}, torch::kFloat32);
  std::vector<torch::Tensor> tensors{buffer};
  const double start = clock_.now();
  const sched::Layout& layout = schedule_.layout;
  const int peer_rank = sched::peer_of(layout, rank_, a).rank;
  const int peer = layout.pipeline_rank(peer_rank);
  const int tag = sched::transfer_tag(layout, a);
  wait(comm_.post(sched::to_string(a), {peer_rank},
                  [&] { return comm_.pipeline().recv(tensors, peer, tag); }),
       a, {peer_rank});
  const double posted = buffer[numel].item<double>();
  exposed_ = std::max(0.0, clock_.now() - std::max(start, posted));
  torch::Tensor tensor =
      buffer.narrow(0, 0, numel)
          .view({spec.micro_batch_size, scenario_.model.seq_len, scenario_.model.d_model});
  const Key key{a.stage, a.microbatch};
  if (a.kind == ActionKind::RECV_F)
    activations_[key] = tensor;
  else
    gradients_[key] = tensor;
}

void Executor::optimizer_step(const Action& a) {
  StageState& stage = stages_.at(a.stage);
  stage.optimizer->step();
  stage.optimizer->zero_grad();
}

}  // namespace dtwin::rt
