// A rank's place in a c10d group whose messages a pass exchanges inside itself (tensor
// parallelism's collectives, expert parallelism's all-to-alls, context parallelism's ring), with
// the counters that time them and count their bytes.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <atomic>
#include <cstdint>
#include <memory>

namespace dtwin::nn {

/// `size` members of `backend`, this one `rank`. size 1 (the default, no backend): nothing is
/// exchanged.
struct CountedGroup {
  c10::intrusive_ptr<c10d::Backend> backend;
  int rank = 0;
  int size = 1;
  /// Wall nanoseconds spent waiting for the group's messages, and the CPU nanoseconds the
  /// process's other threads ran meanwhile; StageModule points them at its tensor-parallel
  /// group's counters, so that a pass's inner communication is one figure.
  std::shared_ptr<std::atomic<int64_t>> collective_ns = std::make_shared<std::atomic<int64_t>>(0);
  std::shared_ptr<std::atomic<int64_t>> helper_cpu_ns = std::make_shared<std::atomic<int64_t>>(0);
  /// Bytes this member sent to the other members (what it keeps is not counted; expert and
  /// context parallelism count them, tensor parallelism does not).
  std::shared_ptr<std::atomic<int64_t>> bytes_sent = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace dtwin::nn
