// GEMM throughput at a model's own shapes: the GEMMs one GPU (or CPU rank) runs per microbatch,
// and the kernel model's gemm_efficiency that reproduces their measured seconds, so that a
// device description calibrated on one machine predicts other layouts of it.
#pragma once

#include <vector>

#include "models/cost/layer_ops.hpp"
#include "models/cost/profile.hpp"
#include "models/spec/device_description.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin {

/// The GEMM operators of one transformer layer and of the last stage's head, per microbatch on
/// one GPU of a tensor-parallel group of layout.tp: those of layer_ops and head_ops in F, then
/// I (dgrad), then W (wgrad), in that order. Llama: 5 per layer per pass (qkv, out, gate, up,
/// down) and the LM head's 1, 18 in all; gpt2: 4 and 1, 15.
std::vector<Op> model_gemms(const ModelSpec& model, const LayoutSpec& layout, Precision precision);

/// FLOP/s that `points` reach together: Σ 2·m·n·k / Σ seconds. 0 when their seconds sum to 0.
double achieved_gemm_flops(const std::vector<GemmPoint>& points);

/// The gemm_efficiency in (0, 1] at which the kernel model's seconds of `points` (gemm_seconds
/// of each shape on `device` at `precision`, tile and wave quantization, memory bound and
/// kernel overhead included) sum to their measured seconds: a time-weighted fit, since the sum
/// is what a step pays. The sum falls as the efficiency grows, so the root is found by
/// bisection; where even an efficiency of 1 predicts more than was measured, 1. Throws
/// std::invalid_argument when `points` is empty or their seconds sum to 0.
double fitted_gemm_efficiency(const DeviceDescription& device, const std::vector<GemmPoint>& points,
                              Precision precision);

}  // namespace dtwin
