// How much memory this rank took at most, on the device it trains on.
#pragma once

#include "models/settings.hpp"

namespace dtwin::rt {

/// Peak bytes of this process on `device` (runtime.device): for "cpu" the peak resident set
/// size (getrusage ru_maxrss, which includes LibTorch itself); for "cuda" the CUDA caching
/// allocator's peak allocated bytes on the current device (CUDA builds; 0 in CPU-only builds).
double peak_memory_bytes(RuntimeDevice device);

}  // namespace dtwin::rt
