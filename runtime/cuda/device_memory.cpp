#include "runtime/cuda/device_memory.hpp"

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>

#include <optional>

namespace dtwin::rt::cuda {
namespace {

// The caching allocator's allocated-bytes statistic of `device` over all pools, or nullopt when
// CUDA has not been initialised in this process.
std::optional<c10::CachingAllocator::Stat> allocated(int device) {
  namespace allocator = c10::cuda::CUDACachingAllocator;
  if (!torch::cuda::is_available() || !allocator::get()->initialized()) return std::nullopt;
  const auto stats = allocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
}

}  // namespace

double peak_allocated_bytes(int device) {
  const auto stat = allocated(device);
  return stat ? static_cast<double>(stat->peak) : 0;
}

double allocated_bytes(int device) {
  const auto stat = allocated(device);
  return stat ? static_cast<double>(stat->current) : 0;
}

}  // namespace dtwin::rt::cuda
