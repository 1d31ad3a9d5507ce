// Host-bound execution: a rank's host thread issues kernels in order, each after its host cost,
// while the device runs them asynchronously in the same order. The device starves whenever its
// kernels are shorter than their issue: a pass then takes the host's time, not the device's.
#pragma once

#include <vector>

namespace dtwin {

/// One kernel (or a collective, or a fused group) as the host issues it and the device runs it.
struct Issue {
  double host = 0;    ///< seconds the host spends before the kernel is in the device's queue
  double device = 0;  ///< seconds the device runs it
};

/// Seconds from the moment the host starts issuing `issues` (in order, `repeats` times over, as
/// a stage's layers are) until the device finishes the last, the host never waiting for the
/// device and the device running each kernel once it is issued and the previous one is done:
///
///   h_i = h_{i-1} + host_i,  d_i = max(d_{i-1}, h_i) + device_i,  h_0 = d_0 = 0
///
/// (a queue with one server; the host's and the device's clocks start together, as after a
/// synchronisation). It is at least max(Σ host, Σ device) and at most Σ host + Σ device.
double queued_seconds(const std::vector<Issue>& issues, int repeats = 1);

/// queued_seconds less the device's own Σ device · repeats: the seconds the device waits for
/// the host (its stall), >= 0.
double host_stall_seconds(const std::vector<Issue>& issues, int repeats = 1);

}  // namespace dtwin
