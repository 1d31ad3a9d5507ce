// The bytes CPU tensors occupy: a counting CPU allocator for LibTorch.
#pragma once

#include <cstddef>

namespace dtwin::rt {

/// Makes every later CPU tensor allocation of this process go through a counting allocator
/// (c10::SetCPUAllocator) that allocates as LibTorch's default one does (c10::alloc_cpu, 64-byte
/// aligned), each block after a one-alignment-unit header holding its size; idempotent and
/// thread-safe. Storage allocated earlier is not counted, and its release is not subtracted.
void count_cpu_tensor_bytes();

/// Bytes of CPU tensor storage allocated since count_cpu_tensor_bytes() and not yet freed.
std::size_t live_cpu_tensor_bytes();

/// The most live_cpu_tensor_bytes() has been since count_cpu_tensor_bytes(), in bytes.
std::size_t peak_cpu_tensor_bytes();

}  // namespace dtwin::rt
