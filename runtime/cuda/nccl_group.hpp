// ProcessGroupNCCL, compiled only in CUDA builds (DTWIN_HAVE_CUDA).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace dtwin::rt::cuda {

/// An NCCL process group of `size` ranks, this one being `rank`, rendezvousing through `store`;
/// each rank drives the current CUDA device (one GPU per rank), to which the group is bound.
/// Operations whose collective does not finish within `timeout_s` seconds fail (NCCL's watchdog
/// aborts the communicator).
c10::intrusive_ptr<c10d::Backend> nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                             int size, double timeout_s);

}  // namespace dtwin::rt::cuda
