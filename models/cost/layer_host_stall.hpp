// The seconds a GPU waits for its host thread while a stage's transformer layers run: the
// host-bound part of each pass (models/cost/host_queue.hpp), from the operators of
// models/cost/layer_ops.hpp, the framework operators the host dispatches for each
// (models/cost/host_ops.hpp) and the device description's host_op_overhead.
#pragma once

#include "models/spec/device_description.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin {

/// Stall seconds per microbatch of each pass of a stage's layers; 0 where the host keeps ahead.
struct HostStall {
  double forward = 0;
  double input_backward = 0;   ///< I alone (split backward), recomputation included
  double weight_backward = 0;  ///< W alone
  double backward = 0;         ///< B = I and W together, as autograd interleaves them
};

/// The stall of `layers` consecutive layers (queued_seconds with the layer's issues repeated
/// `layers` times). Each operator is an Issue of host_ops · host_op_overhead host seconds
/// (host_op_overhead_no_grad and host_ops_no_grad for the forward that full recomputation runs
/// without autograd) and op_seconds on the device. With tensor parallelism each layer's
/// collectives join the queue as one dispatched operator each, of `tp_collective_s` device
/// seconds: in F after the row-parallel GEMMs (the attention output projection and the MLP's
/// last), in I after the column-parallel GEMMs' dgrad (QKV and the MLP's first, fused gate and
/// up for llama), and, under full recomputation, the recomputed forward's as in F. The
/// recomputed forward (full) or attention core (selective) runs first in I and B. B interleaves
/// I and W per operator, as autograd runs a linear layer's dgrad and wgrad in one node.
HostStall layer_host_stall(const DeviceDescription& device, const Scenario& scenario, int layers,
                           double tp_collective_s);

}  // namespace dtwin
