// The host seconds one dispatched operator costs the runtime's thread on a rank's device: what
// the host-bound model (models/cost/layer_host_stall.hpp) charges per framework operator
// (DeviceDescription::host_op_overhead), measured for dtwin's C++ LibTorch instead of the
// Python frameworks' figure that the shipped device descriptions carry (bench/host_dispatch.py).
#pragma once

#include <torch/types.h>

namespace dtwin::rt {

/// Median host seconds per operator (with autograd recording it, and without).
struct HostOpSeconds {
  double grad = 0;
  double no_grad = 0;
};

/// Times `rounds` rounds of `ops_per_round` element-wise additions on a 16-element fp32 tensor of
/// `device` as the host issues them, without waiting for the device: with grad, on a tensor that
/// requires grad (each call records an autograd node, as a training forward does), and under
/// NoGradGuard. A round stays well below a GPU's launch queue (1,024 entries), and the device is
/// synchronised between rounds, outside the timing, so that the host never waits for a full
/// queue: on a GPU the figure is the launch's host cost, on a CPU the whole operator (the device
/// is the host). Returns each mode's median of the rounds' seconds / ops_per_round. Throws
/// std::invalid_argument unless rounds ≥ 1 and 1 ≤ ops_per_round ≤ 512.
HostOpSeconds measure_host_op_seconds(const torch::Device& device, int rounds = 9,
                                      int ops_per_round = 256);

}  // namespace dtwin::rt
