// The CUDA caching allocator's statistics, compiled only in CUDA builds (DTWIN_HAVE_CUDA).
#pragma once

namespace dtwin::rt::cuda {

/// The most bytes that tensors occupied at once on CUDA device `device` since the process
/// started (the caching allocator's peak allocated bytes, all pools); 0 when CUDA has not been
/// initialised in this process.
double peak_allocated_bytes(int device);

/// The bytes that tensors occupy now on CUDA device `device` (the caching allocator's current
/// allocated bytes, all pools); 0 when CUDA has not been initialised in this process.
double allocated_bytes(int device);

}  // namespace dtwin::rt::cuda
