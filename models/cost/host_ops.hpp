// How many framework operators the host thread dispatches for each operator of a transformer
// layer (models/cost/layer_ops.hpp): the counts behind host-bound execution (host_queue.hpp).
//
// A GPU runs a training framework's kernels asynchronously while the host walks the Python
// model; every framework operator the host dispatches (a kernel launch, a view, a reshape, an
// autograd Function) costs it DeviceDescription::host_op_overhead seconds. The counts are those
// of bench/host_dispatch.py, which runs the operator sequence of Megatron-LM's GPT layer
// (megatron/model/transformer.py: fused LayerNorm, fused scale-mask-softmax, attention dropout,
// bias-GeLU and bias-dropout-add fusions) and of Megatron-Core's LLaMA layer (fused RMSNorm,
// rotary embedding, flash attention, SwiGLU) under PyTorch's dispatcher and counts what it
// dispatches (TorchDispatchMode), per operator and pass; tests/test_host_queue.cpp checks this
// table against it. Tensor parallelism adds one operator per collective (c10d's all-reduce,
// all-gather or reduce-scatter goes through the dispatcher); the embedding, the head and the
// optimizer step are not counted.
#pragma once

#include <string_view>

#include "models/spec/settings.hpp"

namespace dtwin {

/// Framework operators the host dispatches for one layer operator.
struct HostOps {
  int forward = 0;          ///< in a forward that autograd records
  int forward_no_grad = 0;  ///< in a forward under torch.no_grad (full recomputation's first)
  int backward = 0;         ///< in the backward the autograd engine runs for it
};

/// The counts for the layer operator `name` (layer_ops' names: "input_norm", "qkv", "rotary",
/// "attention", "attention_out", "attention_residual", "mlp_norm", "mlp_fc1", "gelu",
/// "mlp_fc2", "mlp_gate", "mlp_up", "swiglu", "mlp_down", "mlp_residual") of a `family` layer
/// with `attention`. Throws std::logic_error (a bug) for a name the family's layer does not have.
HostOps layer_host_ops(ModelFamily family, Attention attention, std::string_view name);

}  // namespace dtwin
