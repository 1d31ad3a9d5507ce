#include "runtime/heap_policy.hpp"

#include <malloc.h>

namespace dtwin::rt {

void keep_freed_heap_memory() {
  constexpr int kMmapThreshold = 32 << 20;  // glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
  constexpr int kTrimThreshold = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

}  // namespace dtwin::rt
