#include "runtime/cuda/nccl_group.hpp"

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <chrono>

#include "runtime/clock.hpp"

namespace dtwin::rt::cuda {

c10::intrusive_ptr<c10d::Backend> nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                             int size, double timeout_s) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = to_milliseconds(timeout_s);
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}

}  // namespace dtwin::rt::cuda
