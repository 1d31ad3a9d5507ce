#include "runtime/peak_memory.hpp"

#include <sys/resource.h>

#if DTWIN_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>

#include "runtime/cuda/device_memory.hpp"
#endif

namespace dtwin::rt {

double peak_memory_bytes(RuntimeDevice device) {
#if DTWIN_HAVE_CUDA
  if (device == RuntimeDevice::Cuda) return cuda::peak_allocated_bytes(c10::cuda::current_device());
#else
  if (device == RuntimeDevice::Cuda) return 0;
#endif
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss * 1024.0;
}

}  // namespace dtwin::rt
