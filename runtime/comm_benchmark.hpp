// Gloo figures for the profile: point-to-point latency and bandwidth, all-reduce seconds.
#pragma once

#include <vector>

#include "models/profile.hpp"

namespace dtwin::rt {

/// Runs `ranks` Gloo ranks as threads of this process, connected through a TCPStore and real
/// loopback sockets. Sets profile.p2p_latency (half the median round trip of a 4-byte message)
/// and p2p_bandwidth (bytes / (one-way time of `message_bytes` - latency)) and, for ranks >= 2
/// in `allreduce_ranks`, one all-reduce point per size in `allreduce_bytes` (median seconds).
void measure_communication(Profile& profile, double message_bytes, int allreduce_ranks,
                           const std::vector<double>& allreduce_bytes, int repeats);

}  // namespace dtwin::rt
