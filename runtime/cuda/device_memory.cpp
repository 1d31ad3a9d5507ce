#include "runtime/cuda/device_memory.hpp"

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>

namespace dtwin::rt::cuda {

double peak_allocated_bytes(int device) {
  namespace allocator = c10::cuda::CUDACachingAllocator;
  if (!torch::cuda::is_available() || !allocator::get()->initialized()) return 0;
  const auto stats = allocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return static_cast<double>(
      stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak);
}

}  // namespace dtwin::rt::cuda
