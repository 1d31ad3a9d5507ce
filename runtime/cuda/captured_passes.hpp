// PassGraphs on CUDA (runtime/pass_graphs.hpp): at::cuda::CUDAGraph captures on a side stream.
#pragma once

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAStream.h>

#include <functional>

#include "runtime/pass_graphs.hpp"

namespace dtwin::rt::cuda {

class CapturedPasses : public PassGraphs {
 public:
  /// Takes a side stream of the current device for its captures.
  explicit CapturedPasses(nn::StageModule& module);
  torch::Tensor forward(std::int64_t step, const torch::Tensor& ids,
                        const torch::Tensor& targets) override;
  void backward(const torch::Tensor& loss, double scale) override;

 private:
  /// Runs `body` on the side stream, ordered after the current stream's work and before its
  /// later work (torch.cuda.graph's scheme).
  void on_side_stream(const std::function<void()>& body);
  /// Captures `body` into `graph`, allocating from `pool`; capture records without running.
  void capture(at::cuda::CUDAGraph& graph, c10::MempoolId_t pool,
               const std::function<void()>& body);

  nn::StageModule& module_;
  c10::cuda::CUDAStream side_;
  at::cuda::CUDAGraph forward_graph_, backward_graph_;
  bool forward_captured_ = false, backward_captured_ = false;
  bool replayed_ = false;               ///< the last forward was a replay
  std::int64_t first_step_ = -1;        ///< the first step this process ran
  double scale_ = 0;                    ///< the scale the backward graph was captured with
  torch::Tensor ids_, targets_, loss_;  ///< the graphs' static input and output buffers
};

}  // namespace dtwin::rt::cuda
