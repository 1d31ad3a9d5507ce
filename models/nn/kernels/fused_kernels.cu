// The CUDA kernels of fused_kernels.hpp. Element-wise kernels: one thread per element (per pair
// for the rotary embeddings), fp32 arithmetic. The cross-entropy: one block per row, an online
// softmax (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax") to find the
// row's max and normaliser in one read, a second read to write the gradient in place (llm.c's
// fused classifier, Karpathy 2024). fp8 quantisation: a grid-stride loop that casts with
// saturation (cuda_fp8.h) and reduces |x| per block, one atomic max per block (non-negative
// floats order as their bit patterns do).
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/nn/kernels/fused_kernels.hpp"

namespace dtwin::nn::kernels {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load(const float* p, std::int64_t i) {
  return p[i];
}
__device__ __forceinline__ float load(const __nv_bfloat16* p, std::int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ __forceinline__ void store(float* p, std::int64_t i, float v) {
  p[i] = v;
}
__device__ __forceinline__ void store(__nv_bfloat16* p, std::int64_t i, float v) {
  p[i] = __float2bfloat16(v);
}

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

void check_launch(const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    throw std::runtime_error(std::string("dtwin CUDA kernel ") + kernel + ": " +
                             cudaGetErrorString(error));
}

template <typename T>
__global__ void rotary_kernel(const T* x, const float* cos, const float* sin, T* y,
                              std::int64_t rows, std::int64_t seq, std::int64_t heads,
                              std::int64_t head_dim, bool transpose) {
  const std::int64_t half = head_dim / 2;
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tid >= rows * half) return;
  const std::int64_t row = tid / half, i = tid % half, j = i + half;
  const std::int64_t table = ((row / heads) % seq) * head_dim;
  const std::int64_t base = row * head_dim;
  const float xi = load(x, base + i), xj = load(x, base + j);
  const float ci = cos[table + i], cj = cos[table + j], si = sin[table + i], sj = sin[table + j];
  if (!transpose) {
    store(y, base + i, xi * ci - xj * si);
    store(y, base + j, xj * cj + xi * sj);
  } else {
    store(y, base + i, xi * ci + xj * sj);
    store(y, base + j, xj * cj - xi * si);
  }
}

__device__ __forceinline__ float sigmoid(float v) {
  return 1.0f / (1.0f + __expf(-v));
}

template <typename T>
__global__ void swiglu_forward_kernel(const T* a, const T* b, T* out, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float av = load(a, i);
  store(out, i, av * sigmoid(av) * load(b, i));
}

template <typename T>
__global__ void swiglu_backward_kernel(const T* a, const T* b, const T* g, T* da, T* db,
                                       std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float av = load(a, i), bv = load(b, i), gv = load(g, i), s = sigmoid(av);
  store(da, i, gv * bv * s * (1.0f + av * (1.0f - s)));
  store(db, i, gv * av * s);
}

/// (max, sum of exp(v − max)) of two partial softmax normalisers, merged.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float top = fmaxf(m, m2);
  if (top == -INFINITY) return;  // both empty
  s = s * __expf(m - top) + s2 * __expf(m2 - top);
  m = top;
}

template <typename T>
__global__ void cross_entropy_kernel(T* logits, const std::int64_t* targets, float* losses,
                                     std::int64_t vocab, float grad_scale) {
  __shared__ float shared_max[kThreads / 32], shared_sum[kThreads / 32];
  T* row = logits + static_cast<std::int64_t>(blockIdx.x) * vocab;
  float m = -INFINITY, s = 0.0f;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) merge(m, s, load(row, j), 1.0f);
  for (int offset = 16; offset > 0; offset /= 2)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, offset), __shfl_xor_sync(0xffffffffu, s, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    shared_max[warp] = m;
    shared_sum[warp] = s;
  }
  __syncthreads();
  m = -INFINITY;
  s = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) merge(m, s, shared_max[w], shared_sum[w]);
  const std::int64_t target = targets[blockIdx.x];
  const bool valid = target >= 0 && target < vocab;
  if (threadIdx.x == 0) losses[blockIdx.x] = valid ? logf(s) + m - load(row, target) : NAN;
  __syncthreads();  // the target's logit is read before the row is overwritten
  const float inverse = 1.0f / s;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float p = __expf(load(row, j) - m) * inverse;
    store(row, j, (p - (j == target ? 1.0f : 0.0f)) * grad_scale);
  }
}

constexpr unsigned kQuantizeBlocks = 132 * 8;  // H100 SXM's 132 SMs, 8 blocks each

template <typename T>
__global__ void quantize_fp8_kernel(const T* x, std::int64_t n, const float* scale,
                                    __nv_fp8_interpretation_t format, __nv_fp8_storage_t* q,
                                    float* amax) {
  __shared__ float shared[kThreads / 32];
  const float s = q != nullptr ? *scale : 0.0f;
  float largest = 0.0f;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = load(x, i);
    largest = fmaxf(largest, fabsf(v));
    if (q != nullptr) q[i] = __nv_cvt_float_to_fp8(v * s, __NV_SATFINITE, format);
  }
  if (amax == nullptr) return;
  for (int offset = 16; offset > 0; offset /= 2)
    largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, offset));
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = largest;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < kThreads / 32; ++w) largest = fmaxf(largest, shared[w]);
  atomicMax(reinterpret_cast<int*>(amax), __float_as_int(largest));
}

}  // namespace

void quantize_fp8(const void* x, std::int64_t n, bool bf16, const float* scale, bool e5m2, void* q,
                  float* amax, void* stream) {
  if (n == 0) return;
  auto* s = static_cast<cudaStream_t>(stream);
  const unsigned grid = std::min<unsigned>(blocks_for(n), kQuantizeBlocks);
  const __nv_fp8_interpretation_t format = e5m2 ? __NV_E5M2 : __NV_E4M3;
  auto* out = static_cast<__nv_fp8_storage_t*>(q);
  if (bf16)
    quantize_fp8_kernel<<<grid, kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(x), n, scale,
                                                  format, out, amax);
  else
    quantize_fp8_kernel<<<grid, kThreads, 0, s>>>(static_cast<const float*>(x), n, scale, format,
                                                  out, amax);
  check_launch("quantize_fp8");
}

void rotary(const void* x, const float* cos, const float* sin, void* y, std::int64_t rows,
            std::int64_t seq, std::int64_t heads, std::int64_t head_dim, bool bf16, bool transpose,
            void* stream) {
  const std::int64_t pairs = rows * (head_dim / 2);
  if (pairs == 0) return;
  auto* s = static_cast<cudaStream_t>(stream);
  if (bf16)
    rotary_kernel<<<blocks_for(pairs), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(x), cos,
                                                         sin, static_cast<__nv_bfloat16*>(y), rows,
                                                         seq, heads, head_dim, transpose);
  else
    rotary_kernel<<<blocks_for(pairs), kThreads, 0, s>>>(static_cast<const float*>(x), cos, sin,
                                                         static_cast<float*>(y), rows, seq, heads,
                                                         head_dim, transpose);
  check_launch("rotary");
}

void swiglu_forward(const void* a, const void* b, void* out, std::int64_t n, bool bf16,
                    void* stream) {
  if (n == 0) return;
  auto* s = static_cast<cudaStream_t>(stream);
  if (bf16)
    swiglu_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(a),
                                                             static_cast<const __nv_bfloat16*>(b),
                                                             static_cast<__nv_bfloat16*>(out), n);
  else
    swiglu_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(out), n);
  check_launch("swiglu_forward");
}

void swiglu_backward(const void* a, const void* b, const void* g, void* da, void* db,
                     std::int64_t n, bool bf16, void* stream) {
  if (n == 0) return;
  auto* s = static_cast<cudaStream_t>(stream);
  if (bf16)
    swiglu_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b),
        static_cast<const __nv_bfloat16*>(g), static_cast<__nv_bfloat16*>(da),
        static_cast<__nv_bfloat16*>(db), n);
  else
    swiglu_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const float*>(a), static_cast<const float*>(b), static_cast<const float*>(g),
        static_cast<float*>(da), static_cast<float*>(db), n);
  check_launch("swiglu_backward");
}

void cross_entropy_rows(void* logits, const std::int64_t* targets, float* losses, std::int64_t rows,
                        std::int64_t vocab, float grad_scale, bool bf16, void* stream) {
  if (rows == 0) return;
  auto* s = static_cast<cudaStream_t>(stream);
  const auto grid = static_cast<unsigned>(rows);
  if (bf16)
    cross_entropy_kernel<<<grid, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(logits), targets,
                                                   losses, vocab, grad_scale);
  else
    cross_entropy_kernel<<<grid, kThreads, 0, s>>>(static_cast<float*>(logits), targets, losses,
                                                   vocab, grad_scale);
  check_launch("cross_entropy_rows");
}

}  // namespace dtwin::nn::kernels
