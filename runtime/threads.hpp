// How many CPU threads a rank computes with.
#pragma once

namespace dtwin::rt {

/// Sets LibTorch's intra-op threads to `requested`, or when 0 to this rank's share of the
/// machine's cores (cores / local_world_size, at least 1), and OpenBLAS's own pool to 1 thread:
/// ATen's OpenMP workers and OpenBLAS's pthreads spinning side by side cost 1.5-2x on a 2-core
/// machine (bench/train_vs_pytorch.py). Returns the intra-op thread count.
int configure_threads(int requested, int local_world_size);

}  // namespace dtwin::rt
