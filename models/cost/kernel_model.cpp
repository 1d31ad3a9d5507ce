#include "models/cost/kernel_model.hpp"

#include <algorithm>
#include <cmath>

namespace dtwin {

double gemm_seconds(const DeviceDescription& device, double m, double n, double k,
                    Precision precision, double batch) {
  const double tiles = batch * std::ceil(m / device.tile_m) * std::ceil(n / device.tile_n);
  const double waves = std::ceil(tiles / device.sm_count);
  const double quantization =
      m * n * batch / (waves * device.sm_count * device.tile_m * device.tile_n);
  const double compute = 2 * m * n * k * batch /
                         (device.peak_flops(precision) * device.gemm_efficiency * quantization);
  const double bytes = (m * k + k * n + m * n) * batch * element_bytes(precision);
  const double memory = bytes / (device.memory_bandwidth * device.memory_efficiency);
  return std::max(compute, memory) + device.kernel_overhead;
}

double memory_bound_seconds(const DeviceDescription& device, double bytes) {
  return bytes / (device.memory_bandwidth * device.memory_efficiency) + device.kernel_overhead;
}

double attention_flops(const AttentionCore& core) {
  const double keys = core.key_len > 0 ? core.key_len : core.seq_len;
  const double forward = 4 * core.batch_heads * core.seq_len * keys * core.head_dim;
  if (!core.backward) return forward;
  return core.kind == Attention::Flash ? 2.5 * forward : 2 * forward;
}

double attention_seconds(const DeviceDescription& device, const AttentionCore& core,
                         Precision precision) {
  if (core.kind == Attention::Flash) {
    const double efficiency =
        core.backward ? device.attention_backward_efficiency : device.attention_forward_efficiency;
    const double speedup = core.causal ? device.attention_causal_speedup : 1;
    return attention_flops(core) / (device.peak_flops(precision) * efficiency * speedup) +
           device.kernel_overhead;
  }
  const double s = core.seq_len, dh = core.head_dim, batch = core.batch_heads;
  const double e = element_bytes(precision);
  const double scores = batch * s * s;  // N, elements of the score tensor
  // GEMMs whose result is s × s (QKᵀ, dP) and whose result is s × dh (AV, dV, dQ, dK).
  const double square = gemm_seconds(device, s, s, dh, precision, batch);
  const double thin = gemm_seconds(device, s, dh, s, precision, batch);
  double seconds = core.backward ? square + 3 * thin + memory_bound_seconds(device, 3 * scores * e)
                                 : square + thin + memory_bound_seconds(device, 2 * scores * e);
  if (core.dropout) seconds += memory_bound_seconds(device, 2 * scores * e + scores);
  return seconds;
}

}  // namespace dtwin
