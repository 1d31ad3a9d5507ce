#include "models/cost/parallel_memory.hpp"

#include <stdexcept>
#include <string>

namespace dtwin {
namespace {

/// Model-state bytes per parameter before sharding when weights and gradients have one width, in
/// both precisions (ZeRO §3.1); the optimizer holds what the weights and gradients leave of it.
constexpr double kStateBytesPerParam = 16;

void check_zero(int zero) {
  if (zero < 0 || zero > 3)
    throw std::invalid_argument("ZeRO stage " + std::to_string(zero) + " is not 0..3");
}

// Korthikanti et al. 2022 Table 2, in 16-bit bytes per sbh, scaled to bytes_per_element.
double gpt_layer_bytes(const LayerActivationShape& x, Recompute recompute, Attention attention,
                       double bytes_per_element) {
  const double sbh = x.s * x.b * x.h, t = x.t;
  const double scores = attention == Attention::Flash ? 0 : 5 * x.a * x.s / (x.h * t);
  const double split = 20 + 4 * x.kv_ratio;  // 24 with multi-head attention: K and V 2r each
  const double kept = x.sequence_parallel ? (10 + split) / t : 10 + split / t;
  double per_sbh = 0;
  switch (recompute) {
    case Recompute::None:
      per_sbh = kept + scores;
      break;
    case Recompute::Selective:
      per_sbh = kept;
      break;
    case Recompute::Full:
      per_sbh = x.sequence_parallel ? 2 / t : 2;
      break;
  }
  return sbh * per_sbh * bytes_per_element / 2;
}

// The saved tensors of models/nn/decoder_layer.cpp's DecoderLayer (see the header), in bytes.
double llama_layer_bytes(const LayerActivationShape& x, Recompute recompute, Attention attention,
                         double e) {
  const double sbh = x.s * x.b * x.h, t = x.t;
  const double norm_shard = x.sequence_parallel ? t : 1;
  if (recompute == Recompute::Full) return e * sbh / norm_shard;
  const double norms = 2 * (4 + 2 * e) * sbh / norm_shard;  // fp32 input, normalised, output
  const double softmax =
      attention == Attention::Eager && recompute == Recompute::None ? x.a * x.s * x.s * x.b : 0;
  const double attention_kept = (2 + 2 * x.kv_ratio) * sbh;  // q, k, v and the output
  return norms + e * (attention_kept + softmax + 4 * x.s * x.b * x.f) / t;
}

}  // namespace

double model_state_bytes(double params, int zero, int dp, Offload offload, double bytes_per_element,
                         double grad_bytes_per_element) {
  check_zero(zero);
  if (dp < 1) throw std::invalid_argument("model_state_bytes: dp < 1");
  if (grad_bytes_per_element < bytes_per_element)
    throw std::invalid_argument("model_state_bytes: gradients narrower than the weights");
  const double n = dp;
  const double weights = params * bytes_per_element / (zero >= 3 ? n : 1);
  const double gradients = params * grad_bytes_per_element / (zero >= 2 ? n : 1);
  const double optimizer =
      params * (kStateBytesPerParam - 2 * bytes_per_element) / (zero >= 1 ? n : 1);
  switch (offload) {
    case Offload::None:
      return weights + gradients + optimizer;
    case Offload::Optimizer:
      return weights + gradients;
    case Offload::OptimizerParams:
      return 0;
  }
  throw std::logic_error("model_state_bytes: offload without a rule");
}

double dp_traffic_elements(double params, int zero) {
  check_zero(zero);
  return (zero == 3 ? 3 : 2) * params;
}

double layer_activation_bytes(const LayerActivationShape& x, Recompute recompute,
                              Attention attention, double bytes_per_element) {
  return x.family == ModelFamily::Llama
             ? llama_layer_bytes(x, recompute, attention, bytes_per_element)
             : gpt_layer_bytes(x, recompute, attention, bytes_per_element);
}

double fp8_saved_input_reduction(const LayerActivationShape& x, Recompute recompute, double e) {
  if (recompute == Recompute::Full) return 0;
  const double sbh = x.s * x.b * x.h, t = x.t;
  const double n = x.sequence_parallel ? t : 1;
  return (e - 1) * (sbh * (2 / n + 1 / t) + x.s * x.b * x.f / t);
}

double input_backward_freed_bytes(const LayerActivationShape& x, Recompute recompute,
                                  Attention attention, double e) {
  if (x.family != ModelFamily::Llama || recompute != Recompute::None) return 0;
  const double sbh = x.s * x.b * x.h, t = x.t;
  const double norm_shard = x.sequence_parallel ? t : 1;
  // Freed: each norm's fp32 input and normalised value, 2·(4 + e)·sbh; rotated q, k and v,
  // (1 + 2r)·sbh; the softmax; the gate, up and SiLU outputs, 3 sbf. Stashed: the gradients of
  // q, k, v ((1 + 2r)·sbh) and of the gate and up projections (2 sbf), column-parallel; of the
  // attention and down projections' outputs, row-parallel, whole (2 sbh).
  const double softmax = attention == Attention::Eager ? x.a * x.s * x.s * x.b : 0;
  const double sbf = x.s * x.b * x.f;
  const double qkv = (1 + 2 * x.kv_ratio) * sbh;
  return 2 * (4 + e) * sbh / norm_shard + e * (qkv + softmax + 3 * sbf) / t -
         e * ((qkv + 2 * sbf) / t + 2 * sbh);
}

double ring_half_seconds(double bytes, int n, double bandwidth, double latency) {
  if (n <= 1) return 0;
  return (n - 1) * (latency + bytes / (n * bandwidth));
}

}  // namespace dtwin
