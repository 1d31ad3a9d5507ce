// The fp8 linear layer of training.precision fp8 (Micikevicius et al. 2022, "FP8 Formats for Deep
// Learning"; Transformer Engine's "hybrid" format): y = x · Wᵀ with x and W quantised to e4m3
// and, in the backward, the output gradient to e5m2, each GEMM one at::_scaled_mm with fp32
// accumulation and a bf16 result, on H100/H200 tensor cores (and on the CPU, where ATen
// emulates it, for the tests).
//
// Scaling (training.fp8_recipe): every operand has one scale per tensor, s = fmax / amax, where
// fmax is the format's largest finite value (448 for e4m3, 57344 for e5m2); q = sat(x · s) in
// fp8 and the GEMM multiplies its result by 1/(s_a · s_b).
//  - delayed (Transformer Engine's DelayedScaling, amax_compute_algo "max", margin 0): amax is
//    the largest of the last `history_len` amaxes of that operand (this call's excluded); at the
//    operand's first call, its current amax. Every call pushes the operand's current amax into
//    its history. All on the device, no host sync; on CUDA one kernel per operand casts and
//    takes the amax (dtwin's quantize_fp8 kernel, models/nn/kernels/).
//  - tensorwise (Float8CurrentScaling; torchtitan's float8 "tensorwise"): the current amax (on
//    CUDA a kernel for the amax, then the cast).
// An amax of 0 (an all-zero tensor, or an all-zero history) gives s = 1.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "models/nn/weight_grad_stash.hpp"
#include "models/spec/settings.hpp"

namespace dtwin::nn {

/// One operand's scaling state: its amax history [history_len] (fp32, newest first, zeros until
/// filled) on the operand's device, created at the first call, and the calls so far.
struct Fp8OperandScaling {
  torch::Tensor history;
  std::int64_t calls = 0;
};

/// The scaling state of one fp8 linear layer: its input (e4m3), weight (e4m3) and output
/// gradient (e5m2).
struct Fp8Scaling {
  /// Throws std::invalid_argument unless `recipe` is delayed or tensorwise and history_len ≥ 1.
  Fp8Scaling(Fp8Recipe recipe, std::int64_t history_len);

  Fp8Recipe recipe;
  std::int64_t history_len;
  Fp8OperandScaling input, weight, grad_output;
};

/// Quantises `x` (any float dtype) to `format` (kFloat8_e4m3fn or kFloat8_e5m2) with one scale as
/// `scaling` prescribes for `recipe` (see above), and records x's amax in its history.
/// Returns (q, s): q has x's shape in `format`, s is a 0-d fp32 tensor with x ≈ q / s.
std::pair<torch::Tensor, torch::Tensor> quantize_fp8(const torch::Tensor& x,
                                                     torch::ScalarType format,
                                                     Fp8OperandScaling& scaling, Fp8Recipe recipe,
                                                     std::int64_t history_len);

/// y [..., out] = input [..., in] · weightᵀ (weight [out, in], any float dtype) in fp8 GEMMs with
/// a bf16 result, through a custom autograd function: grad_input [..., in] = grad_y · W (e5m2 ×
/// e4m3) in bf16, grad_weight = grad_yᵀ · input (e5m2 × e4m3) in weight's dtype — or, when
/// `slot` holds an active stash, recorded there for a later bf16 W pass (weight_grad_stash.hpp).
/// `scaling` and `slot` must outlive the graph. _scaled_mm on CUDA needs in, out and the
/// flattened leading size to be multiples of 16 (ATen throws otherwise).
torch::Tensor fp8_linear(const torch::Tensor& input, const torch::Tensor& weight,
                         Fp8Scaling& scaling, StashSlot& slot);

}  // namespace dtwin::nn
