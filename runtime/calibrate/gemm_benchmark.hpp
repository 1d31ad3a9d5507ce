// GEMM throughput at the model's shapes on this rank's device, for `dtwin profile`.
#pragma once

#include <torch/types.h>

#include <vector>

#include "models/cost/layer_ops.hpp"
#include "models/cost/profile.hpp"

namespace dtwin::rt {

/// Median seconds of each GEMM of `gemms` (OpKind::Gemm ops, e.g. model_gemms) on `device`:
/// at::mm_out of a random A[m×k] by a random B[k×n] into a preallocated C[m×n], all of
/// `dtype` (kFloat32 or kBFloat16), timed by device_seconds `repeats` times after `warmup`
/// untimed runs, with the intra-op threads this process has. Operands are row-major as given;
/// training's dgrad and wgrad GEMMs read one operand transposed, which BLAS and cuBLAS take
/// without a copy. Returns one GemmPoint per op, in order, named as the op. Throws
/// std::invalid_argument for an op that is not a GEMM or repeats < 1.
std::vector<GemmPoint> measure_gemms(const std::vector<Op>& gemms, torch::ScalarType dtype,
                                     const torch::Device& device, int warmup, int repeats);

}  // namespace dtwin::rt
