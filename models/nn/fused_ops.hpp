// Fused versions of the LLaMA layer's memory-bound steps (runtime.fused_kernels), each one
// kernel per pass on CUDA where the composite takes several: ATen's fused RMSNorm, and dtwin's own
// kernels (models/nn/kernels/) for the rotary embeddings, the SwiGLU product and the LM head's
// cross-entropy. On the CPU each computes the same values with ATen operators (the reference the
// tests compare the CUDA kernels against), through the same custom autograd functions whose
// backward formulas are written out. Element types: fp32 or bf16, computing in fp32.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace dtwin::nn {

/// RMSNorm through at::rms_norm (ATen's fused kernel on CUDA): x [..., d] normalised over d in
/// fp32, times weight [d] (cast to x's dtype) -> [..., d] in x's dtype.
torch::Tensor fused_rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

/// Rotary embeddings on x [b, s, n, hd] (the heads' view of a linear layer's output, before the
/// transpose to [b, n, s, hd]) with tables cos, sin [s, hd] (rotary_tables): x·cos +
/// rotate_half(x)·sin per head -> [b, s, n, hd], contiguous. The backward is the transposed
/// rotation of the gradient, one kernel too. Throws c10::Error for other shapes.
torch::Tensor fused_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin);

/// silu(a) · b for a, b of one shape and dtype, one kernel forward and one backward (the
/// composite's three and five), saving only a and b.
torch::Tensor fused_swiglu(const torch::Tensor& a, const torch::Tensor& b);

/// The mean cross-entropy of the LM head's logits x · weightᵀ against targets, without the
/// [N, V] fp32 logits: x [N, d] (bf16 or fp32), weight [V, d] (cast to x's dtype), int64
/// targets [N] in [0, V) -> a 0-d fp32 tensor. Row chunks of at most 2^27 logits go through
/// the head's GEMM (`chunk_logits` sets the bound: tests make it small), a kernel that writes the
/// loss and the logits' gradient (softmax − onehot)/N in place, and the two gradient GEMMs, so the
/// backward only scales the saved gradients (Liger-Kernel's fused linear cross-entropy; llm.c's
/// fused classifier). The weight's gradient is computed in the forward: a weight-gradient stash
/// (split_linear.hpp) does not defer it. Without grad mode, or when neither x nor weight requires
/// grad, only the loss.
torch::Tensor fused_linear_cross_entropy(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& targets,
                                         std::int64_t chunk_logits = std::int64_t{1} << 27);

}  // namespace dtwin::nn
