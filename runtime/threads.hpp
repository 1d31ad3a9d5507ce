// How many CPU threads a rank computes with.
#pragma once

namespace dtwin::rt {

/// Sets LibTorch's intra-op threads (its OpenMP pool, which MKL's BLAS also follows) to
/// `requested`, or when 0 to this rank's share of the machine's cores (cores /
/// local_world_size, at least 1), so that ranks sharing a machine do not oversubscribe it.
/// Returns the intra-op thread count.
int configure_threads(int requested, int local_world_size);

}  // namespace dtwin::rt
