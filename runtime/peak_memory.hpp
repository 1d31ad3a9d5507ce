// How much memory this rank takes, now and at most, on the device it trains on.
#pragma once

#include "models/spec/settings.hpp"

namespace dtwin::rt {

/// Peak bytes of this process's tensors on `device` (runtime.device): for "cpu" the most bytes
/// of live CPU tensor storage since count_cpu_tensor_bytes() (runtime/cpu_tensor_memory.hpp;
/// 0 before it), not LibTorch's code and heap; for "cuda" the CUDA caching allocator's peak
/// allocated bytes on the current device (CUDA builds; 0 in CPU-only builds).
double peak_memory_bytes(RuntimeDevice device);

/// Bytes of this process's tensors on `device` now, counted as peak_memory_bytes counts them:
/// live CPU tensor storage, or the CUDA caching allocator's allocated bytes.
double live_memory_bytes(RuntimeDevice device);

}  // namespace dtwin::rt
