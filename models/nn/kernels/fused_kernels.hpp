// dtwin's own CUDA kernels (fused_kernels.cu, compiled by nvcc for Hopper), for the element-wise
// and row-wise steps ATen has no fused kernel for: rotary embeddings, the SwiGLU product, the
// cross-entropy's softmax with its gradient, and fp8 quantisation with its amax. Plain launchers
// on raw device pointers with no LibTorch types, so that nvcc compiles them without LibTorch's
// headers; models/nn/fused_ops.cpp and fp8_linear.cpp check the tensors and call them on the
// current CUDA stream (`stream`: a cudaStream_t).
// Every element type is fp32 or bf16 (`bf16`), computing in fp32. Each launcher throws
// std::runtime_error with CUDA's message when the launch fails.
#pragma once

#include <cstdint>

namespace dtwin::nn::kernels {

/// Rotary embeddings on x [rows, hd] (contiguous; row r holds position (r / heads) % seq) with fp32
/// tables cos, sin [seq, hd]: y = x·cos + rotate_half(x)·sin, rotate_half([x1, x2]) = [−x2, x1]
/// (halves of hd). With `transpose`, the backward: y = x·cos + rotate_halfᵀ(x·sin), with
/// rotate_halfᵀ([z1, z2]) = [z2, −z1]. y may alias x.
void rotary(const void* x, const float* cos, const float* sin, void* y, std::int64_t rows,
            std::int64_t seq, std::int64_t heads, std::int64_t head_dim, bool bf16, bool transpose,
            void* stream);

/// out = silu(a) · b element-wise over n elements.
void swiglu_forward(const void* a, const void* b, void* out, std::int64_t n, bool bf16,
                    void* stream);

/// The gradients of out = silu(a) · b for grad g: da = g · b · σ(a) · (1 + a · (1 − σ(a))),
/// db = g · silu(a), over n elements.
void swiglu_backward(const void* a, const void* b, const void* g, void* da, void* db,
                     std::int64_t n, bool bf16, void* stream);

/// Cross-entropy of logits [rows, vocab] (contiguous) against int64 targets [rows]: losses[r]
/// (fp32) = logsumexp(row r) − row r[target r], and the row overwritten in place with its
/// gradient scaled by grad_scale: (softmax(row) − onehot(target)) · grad_scale. A target outside
/// [0, vocab) gives a NaN loss.
void cross_entropy_rows(void* logits, const std::int64_t* targets, float* losses, std::int64_t rows,
                        std::int64_t vocab, float grad_scale, bool bf16, void* stream);

/// fp8 quantisation in one pass over x [n] (contiguous): q[i] = x[i] · scale, saturated to the
/// largest finite value of the format (e5m2 when `e5m2`, else e4m3) and rounded to nearest
/// (fp8 stored as bytes), with `scale` a device fp32 scalar; and amax (a device fp32 scalar,
/// zeroed by the caller) raised to max |x[i]|. q null: amax only; amax null: q only.
void quantize_fp8(const void* x, std::int64_t n, bool bf16, const float* scale, bool e5m2, void* q,
                  float* amax, void* stream);

}  // namespace dtwin::nn::kernels
