#include "runtime/cuda/nccl_group.hpp"

#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <chrono>

#include "runtime/clock.hpp"

namespace dtwin::rt::cuda {

c10::intrusive_ptr<c10d::Backend> nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                             int size, double timeout_s) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = to_milliseconds(timeout_s);
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
  // Bound to the current GPU, so that a barrier (or any operation with no tensor) uses this
  // rank's GPU instead of guessing one from the rank number.
  group->setBoundDeviceId(at::Device(at::kCUDA, c10::cuda::current_device()));
  return group;
}

}  // namespace dtwin::rt::cuda
