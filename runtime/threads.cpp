#include "runtime/threads.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

namespace dtwin::rt {

int configure_threads(int requested, int local_world_size) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int threads = requested > 0 ? requested : std::max(1, cores / local_world_size);
  at::set_num_threads(threads);
  return threads;
}

}  // namespace dtwin::rt
