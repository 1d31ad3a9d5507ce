// Gloo for CUDA tensors: ProcessGroupGloo moves point-to-point messages, reduce-scatters and
// gathers of CPU tensors only, so a rank whose tensors live on a GPU (runtime.device cuda with
// runtime.backend gloo, as when several ranks share one GPU) hands every operation to Gloo
// through host copies.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace dtwin::rt {

/// A c10d backend that runs each operation of `inner` on CPU copies of its tensors: the inputs
/// are copied to fresh host tensors when the operation is posted (a blocking device-to-host
/// copy), and the outputs are copied back into the caller's tensors when its Work's wait()
/// returns successfully. It copies whatever the tensors' device, so a CPU run exercises the same
/// path. Offers the operations dtwin uses: allreduce, broadcast, _allgather_base, gather, scatter,
/// reduce_scatter, _reduce_scatter_base, send, recv and barrier.
class HostStagedBackend : public c10d::Backend {
 public:
  explicit HostStagedBackend(c10::intrusive_ptr<c10d::Backend> inner);

  const std::string getBackendName() const override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  c10::intrusive_ptr<c10d::Backend> inner_;
};

}  // namespace dtwin::rt
