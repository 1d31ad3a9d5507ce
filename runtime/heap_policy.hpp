// How the runtime's processes keep freed CPU memory.
#pragma once

namespace dtwin::rt {

/// Makes glibc's malloc keep the memory that tensors free for the next allocation rather than
/// give it back to the kernel: blocks up to 32 MiB (glibc's largest mmap threshold) come from the
/// heap, and the heap's top is trimmed only beyond 1 GiB free. A training step frees and
/// re-allocates its activations every microbatch; memory given back is faulted in again, page by
/// page, by the next microbatch. Measured on the quickstart (2-core VM): stage 1's B took 1180
/// minor page faults and 30.1 ms of CPU with glibc's defaults, 29-37 faults and 26.3-26.6 ms with
/// this (the profile's 25.9 ms), and the step 394 ms against 368 ms. The process's peak RSS grows
/// by at most the memory kept. Call once, early (mallopt(3)); the later calls change nothing.
void keep_freed_heap_memory();

}  // namespace dtwin::rt
