// Timing a collective that a pass runs inside itself (the tensor-parallel collectives, the
// expert-parallel all-to-alls): its wall time and the CPU its helper threads used while the
// caller waited, added to counters that a group's copies share.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>

#include "base/cpu_clock.hpp"

namespace dtwin::nn {

/// Runs `post` (posts a collective and returns its work), waits for it, and adds its wall
/// nanoseconds to collective_ns and the CPU nanoseconds the process's other threads ran meanwhile
/// to helper_cpu_ns.
template <typename Post>
void timed_collective(const std::shared_ptr<std::atomic<int64_t>>& collective_ns,
                      const std::shared_ptr<std::atomic<int64_t>>& helper_cpu_ns, Post&& post) {
  const double helper_start = other_threads_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  post()->wait();
  *collective_ns +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  *helper_cpu_ns += std::llround((other_threads_cpu_seconds() - helper_start) * 1e9);
}

}  // namespace dtwin::nn
