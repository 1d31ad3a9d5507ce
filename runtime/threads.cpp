#include "runtime/threads.hpp"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>
#include <thread>

namespace dtwin::rt {

int configure_threads(int requested, int local_world_size) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int threads = requested > 0 ? requested : std::max(1, cores / local_world_size);
  at::set_num_threads(threads);
  // OpenBLAS is optional (LibTorch may use another BLAS): look its setter up at run time.
  using SetThreads = void (*)(int);
  if (auto set_blas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set_blas(1);
  return threads;
}

}  // namespace dtwin::rt
