#include "runtime/cuda/captured_passes.hpp"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <functional>
#include <stdexcept>

namespace dtwin::rt::cuda {
CapturedPasses::CapturedPasses(nn::StageModule& module)
    : module_(module), side_(c10::cuda::getStreamFromPool()) {}

void CapturedPasses::on_side_stream(const std::function<void()>& body) {
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream();
  at::cuda::CUDAEvent ready;
  ready.record(current);
  ready.block(side_);
  {
    const c10::cuda::CUDAStreamGuard guard(side_);
    body();
  }
  at::cuda::CUDAEvent done;
  done.record(side_);
  done.block(current);
}

void CapturedPasses::capture(at::cuda::CUDAGraph& graph, c10::MempoolId_t pool,
                             const std::function<void()>& body) {
  on_side_stream([&] {
    graph.capture_begin(pool);
    body();
    graph.capture_end();
  });
}

torch::Tensor CapturedPasses::forward(std::int64_t step, const torch::Tensor& ids,
                                      const torch::Tensor& targets) {
  if (first_step_ < 0) first_step_ = step;  // this process's first: a resumed run's starts eager
  replayed_ = step - first_step_ >= kEagerSteps;
  if (!replayed_) return module_.forward(ids, targets);
  if (!forward_captured_) {
    ids_ = ids.clone();
    targets_ = targets.clone();
    // One forward and backward on the side stream first, as torch.cuda.graph asks (its cuBLAS
    // workspace, lazy initialisation), the gradients returned and dropped, not accumulated.
    on_side_stream([&] {
      const torch::Tensor loss = module_.forward(ids_, targets_);
      torch::autograd::grad({loss}, module_.parameters(), {}, /*retain_graph=*/false,
                            /*create_graph=*/false, /*allow_unused=*/true);
    });
    capture(forward_graph_, {0, 0}, [&] { loss_ = module_.forward(ids_, targets_); });
    forward_captured_ = true;
  } else {
    if (ids.sizes() != ids_.sizes() || targets.sizes() != targets_.sizes())
      throw std::logic_error("CapturedPasses: a microbatch of another shape than the captured one");
    ids_.copy_(ids, /*non_blocking=*/true);
    targets_.copy_(targets, /*non_blocking=*/true);
  }
  forward_graph_.replay();
  return loss_;
}

void CapturedPasses::backward(const torch::Tensor& loss, double scale) {
  if (!replayed_) {
    (loss * scale).backward();
    return;
  }
  if (!backward_captured_) {
    scale_ = scale;
    capture(backward_graph_, forward_graph_.pool(), [&] { (loss_ * scale).backward(); });
    backward_captured_ = true;
  } else if (scale != scale_) {
    throw std::logic_error("CapturedPasses: a backward scale other than the captured one");
  }
  backward_graph_.replay();
}

}  // namespace dtwin::rt::cuda
