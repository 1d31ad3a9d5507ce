#include "runtime/peak_memory.hpp"

#include "runtime/cpu_tensor_memory.hpp"

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
  return static_cast<double>(peak_cpu_tensor_bytes());
}

double live_memory_bytes(RuntimeDevice device) {
#if DTWIN_HAVE_CUDA
  if (device == RuntimeDevice::Cuda) return cuda::allocated_bytes(c10::cuda::current_device());
#else
  if (device == RuntimeDevice::Cuda) return 0;
#endif
  return static_cast<double>(live_cpu_tensor_bytes());
}

}  // namespace dtwin::rt
