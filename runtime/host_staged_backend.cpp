#include "runtime/host_staged_backend.hpp"

#include <utility>

namespace dtwin::rt {
namespace {

// A fresh CPU tensor holding t's values.
at::Tensor host_copy(const at::Tensor& t) {
  return t.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

// A fresh CPU tensor of t's shape and dtype, for an operation to write.
at::Tensor host_twin(const at::Tensor& t) {
  return at::empty(t.sizes(), t.options().device(at::kCPU));
}

std::vector<at::Tensor> host_copies(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> copies;
  for (const at::Tensor& t : tensors) copies.push_back(host_copy(t));
  return copies;
}

std::vector<at::Tensor> host_twins(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> twins;
  for (const at::Tensor& t : tensors) twins.push_back(host_twin(t));
  return twins;
}

// (caller's tensor, host tensor the operation wrote): copied back once the operation completed.
using WriteBacks = std::vector<std::pair<at::Tensor, at::Tensor>>;

void add_write_backs(WriteBacks& back, const std::vector<at::Tensor>& callers,
                     const std::vector<at::Tensor>& hosts) {
  for (size_t i = 0; i < callers.size(); ++i) back.emplace_back(callers[i], hosts[i]);
}

class StagedWork : public c10d::Work {
 public:
  StagedWork(c10::intrusive_ptr<c10d::Work> inner, WriteBacks back)
      : inner_(std::move(inner)), back_(std::move(back)) {}

  bool wait(std::chrono::milliseconds timeout) override {
    const bool done = inner_->wait(timeout);
    if (done && !copied_) {
      for (auto& [caller, host] : back_) caller.copy_(host);
      copied_ = true;
    }
    return done;
  }
  bool isCompleted() override { return inner_->isCompleted(); }
  bool isSuccess() const override { return inner_->isSuccess(); }
  std::exception_ptr exception() const override { return inner_->exception(); }
  int sourceRank() const override { return inner_->sourceRank(); }
  void abort() override { inner_->abort(); }

 private:
  c10::intrusive_ptr<c10d::Work> inner_;
  WriteBacks back_;
  bool copied_ = false;
};

// Host operands of an operation that writes `outputs` from lists of inputs (scatter,
// reduce_scatter), and what it writes back.
struct ListOperands {
  std::vector<at::Tensor> outputs;
  std::vector<std::vector<at::Tensor>> inputs;
  WriteBacks back;
};

ListOperands stage_lists(const std::vector<at::Tensor>& outputs,
                         const std::vector<std::vector<at::Tensor>>& inputs) {
  ListOperands host{host_twins(outputs), {}, {}};
  add_write_backs(host.back, outputs, host.outputs);
  for (const std::vector<at::Tensor>& list : inputs) host.inputs.push_back(host_copies(list));
  return host;
}

c10::intrusive_ptr<c10d::Work> staged(c10::intrusive_ptr<c10d::Work> inner, WriteBacks back = {}) {
  return c10::make_intrusive<StagedWork>(std::move(inner), std::move(back));
}

}  // namespace

HostStagedBackend::HostStagedBackend(c10::intrusive_ptr<c10d::Backend> inner)
    : c10d::Backend(inner->getRank(), inner->getSize()), inner_(std::move(inner)) {}

const std::string HostStagedBackend::getBackendName() const {
  return "host-staged " + inner_->getBackendName();
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  std::vector<at::Tensor> host = host_copies(tensors);
  WriteBacks back;
  add_write_backs(back, tensors, host);
  return staged(inner_->allreduce(host, opts), std::move(back));
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  std::vector<at::Tensor> host = host_copies(tensors);
  WriteBacks back;
  add_write_backs(back, tensors, host);
  return staged(inner_->broadcast(host, opts), std::move(back));
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  at::Tensor host_output = host_twin(output), host_input = host_copy(input);
  return staged(inner_->_allgather_base(host_output, host_input, opts), {{output, host_output}});
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  std::vector<std::vector<at::Tensor>> host_outputs;
  WriteBacks back;
  for (const std::vector<at::Tensor>& list : outputs) {
    host_outputs.push_back(host_twins(list));
    add_write_backs(back, list, host_outputs.back());
  }
  std::vector<at::Tensor> host_inputs = host_copies(inputs);
  return staged(inner_->gather(host_outputs, host_inputs, opts), std::move(back));
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  ListOperands host = stage_lists(outputs, inputs);
  return staged(inner_->scatter(host.outputs, host.inputs, opts), std::move(host.back));
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  ListOperands host = stage_lists(outputs, inputs);
  return staged(inner_->reduce_scatter(host.outputs, host.inputs, opts), std::move(host.back));
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  at::Tensor host_output = host_twin(output), host_input = host_copy(input);
  return staged(inner_->_reduce_scatter_base(host_output, host_input, opts),
                {{output, host_output}});
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::send(std::vector<at::Tensor>& tensors, int dst,
                                                       int tag) {
  std::vector<at::Tensor> host = host_copies(tensors);
  return staged(inner_->send(host, dst, tag));
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::recv(std::vector<at::Tensor>& tensors, int src,
                                                       int tag) {
  std::vector<at::Tensor> host = host_twins(tensors);
  WriteBacks back;
  add_write_backs(back, tensors, host);
  return staged(inner_->recv(host, src, tag), std::move(back));
}

c10::intrusive_ptr<c10d::Work> HostStagedBackend::barrier(const c10d::BarrierOptions& opts) {
  return inner_->barrier(opts);
}

}  // namespace dtwin::rt
