#include "models/nn/stage_module.hpp"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "models/nn/fp8_linear.hpp"
#include "models/nn/fused_ops.hpp"
#include "models/nn/param_init.hpp"
#include "models/nn/recompute.hpp"
#include "models/nn/tensor_parallel.hpp"

namespace dtwin::nn {
namespace {

void check_encoder(const ModelSpec& spec, int first_layer, int num_layers, bool has_embedding,
                   bool has_head, Recompute recompute, const TensorParallelGroup& tp,
                   const ExpertParallelGroup& ep, const ContextParallelGroup& cp) {
  if (first_layer != 0 || num_layers != spec.n_layers || !has_embedding || !has_head ||
      tp.size != 1 || ep.size != 1 || cp.size != 1 || recompute != Recompute::None)
    throw std::invalid_argument(
        "dtwin::nn::StageModule: an encoder runs as one stage of the whole model, without "
        "tensor, expert or context parallelism or recomputation");
}

// torch.autocast over one scope: enabled for `device` in `dtype`, the previous state restored
// and the cast-weight cache cleared when the outermost guard ends.
class AutocastGuard {
 public:
  AutocastGuard(at::DeviceType device, at::ScalarType dtype)
      : device_(device),
        was_enabled_(at::autocast::is_autocast_enabled(device)),
        was_dtype_(at::autocast::get_autocast_dtype(device)) {
    at::autocast::set_autocast_enabled(device, true);
    at::autocast::set_autocast_dtype(device, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, was_dtype_);
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  at::DeviceType device_;
  bool was_enabled_;
  at::ScalarType was_dtype_;
};

void check_spec(const ModelSpec& spec, int first_layer, int num_layers,
                const TensorParallelGroup& tp, const ContextParallelGroup& cp) {
  const std::string where = "dtwin::nn::StageModule: ";
  if (spec.family != ModelFamily::Llama)
    throw std::invalid_argument(where + "only the llama family is implemented, got '" +
                                std::string(kModelFamilyNames.name(spec.family)) + "'");
  if (spec.vocab_size <= 0 || spec.d_model <= 0 || spec.n_heads <= 0 || spec.ffn_hidden <= 0 ||
      spec.n_layers <= 0)
    throw std::invalid_argument(where + "model dimensions must be positive");
  if (spec.kv_heads() <= 0 || spec.n_heads % spec.kv_heads() != 0)
    throw std::invalid_argument(where + "n_kv_heads (" + std::to_string(spec.kv_heads()) +
                                ") must divide n_heads (" + std::to_string(spec.n_heads) + ")");
  if (spec.d_model % spec.n_heads != 0 || (spec.d_model / spec.n_heads) % 2 != 0)
    throw std::invalid_argument(where + "d_model (" + std::to_string(spec.d_model) +
                                ") must be n_heads (" + std::to_string(spec.n_heads) +
                                ") times an even head size");
  if (first_layer < 0 || num_layers < 0 || first_layer + num_layers > spec.n_layers)
    throw std::invalid_argument(where + "layers [" + std::to_string(first_layer) + ", " +
                                std::to_string(first_layer + num_layers) + ") outside [0, " +
                                std::to_string(spec.n_layers) + ")");
  if (spec.moe.enabled() && tp.size > 1)
    throw std::invalid_argument(where + "a mixture of experts runs without tensor parallelism");
  if (cp.size < 1 || spec.seq_len % (2 * cp.size) != 0)
    throw std::invalid_argument(where + "context parallelism over " + std::to_string(cp.size) +
                                " members needs seq_len to split into " +
                                std::to_string(2 * cp.size) + " equal chunks");
  const auto splits = [&](std::int64_t n) { return n % tp.size == 0; };
  if (tp.size < 1 || !splits(spec.n_heads) || !splits(spec.kv_heads()) ||
      !splits(spec.ffn_hidden) || !splits(spec.vocab_size) ||
      (tp.sequence_parallel && !splits(spec.seq_len / cp.size)))
    throw std::invalid_argument(where + "tensor parallelism over " + std::to_string(tp.size) +
                                " members needs n_heads, n_kv_heads, ffn_hidden, vocab_size" +
                                (tp.sequence_parallel ? " and seq_len" : "") +
                                (tp.sequence_parallel && cp.size > 1 ? " (seq_len / cp)" : "") +
                                " to be multiples of it");
}

}  // namespace

StageModule::StageModule(const ModelSpec& spec, int first_layer, int num_layers, bool has_embedding,
                         bool has_head, std::uint64_t seed, torch::Device device,
                         torch::ScalarType dtype, Recompute recompute, TensorParallelGroup tp,
                         std::optional<torch::ScalarType> compute, ExpertParallelGroup ep,
                         ContextParallelGroup cp)
    : spec_(spec),
      first_layer_(first_layer),
      num_layers_(num_layers),
      has_embedding_(has_embedding),
      has_head_(has_head),
      recompute_(recompute),
      tp_(std::move(tp)),
      ep_(std::move(ep)),
      cp_(std::move(cp)),
      compute_(compute.value_or(dtype)) {
  if (is_encoder(spec.family)) {
    check_encoder(spec, first_layer, num_layers, has_embedding, has_head, recompute, tp_, ep_, cp_);
    const auto options = torch::TensorOptions().device(device).dtype(dtype);
    encoder_ = register_module("encoder", EncoderClassifier(encoder_config(spec), options));
    init_encoder(*encoder_, seed);
    return;
  }
  check_spec(spec, first_layer, num_layers, tp_, cp_);
  if (ep_.size > 1 && (!spec.moe.enabled() || spec.moe.num_experts % ep_.size != 0))
    throw std::invalid_argument("dtwin::nn::StageModule: expert parallelism over " +
                                std::to_string(ep_.size) +
                                " members needs a mixture of experts whose experts it divides");
  ep_.collective_ns = tp_.collective_ns;  // a pass's inner communication is one figure
  ep_.helper_cpu_ns = tp_.helper_cpu_ns;
  cp_.collective_ns = tp_.collective_ns;
  cp_.helper_cpu_ns = tp_.helper_cpu_ns;
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  const std::int64_t vocab_shard = spec.vocab_size / tp_.size;
  if (has_embedding)
    embed_ = register_module("embed", TokenEmbedding(vocab_shard, spec.d_model, options));
  layer_dict_ = register_module("layers", torch::nn::ModuleDict());
  for (int i = first_layer; i < first_layer + num_layers; ++i) {
    DecoderLayer layer(spec, i, kNormEps, options, recompute == Recompute::Selective, tp_, ep_,
                       cp_);
    layer_dict_->update({{std::to_string(i), layer.ptr()}});
    layers_.push_back(layer);
  }
  if (has_head) {
    norm_ = register_module("norm", RMSNorm(spec.d_model, kNormEps, options));
    head_ = register_module("head", SplitLinear(spec.d_model, vocab_shard, options));
  }
  init_parameters(*this, seed, spec.n_layers, tp_.rank, tp_.size, ep_.rank, ep_.size);
  for (const auto& module : modules(/*include_self=*/false))
    if (auto* linear = module->as<SplitLinearImpl>()) linear->slot = slot_;
}

StageModule::StageModule(const Scenario& scenario, const StageLayers& stage, torch::Device device,
                         torch::ScalarType dtype, TensorParallelGroup tp, ExpertParallelGroup ep,
                         ContextParallelGroup cp)
    : StageModule(scenario.model, stage.first_layer, stage.num_layers, stage.has_embedding,
                  stage.has_head, scenario.training.seed, device, dtype, scenario.layout.recompute,
                  std::move(tp), dtype_of(scenario.training.precision), std::move(ep),
                  std::move(cp)) {
  if (scenario.training.precision == Precision::Fp8)
    use_fp8(scenario.training.fp8_recipe, scenario.training.fp8_amax_history_len);
  if (scenario.runtime.fused_kernels && !encoder_) use_fused_kernels();
}

void StageModule::use_fused_kernels() {
  if (encoder_)
    throw std::invalid_argument("StageModule::use_fused_kernels: the fused kernels are a LLaMA's");
  for (const auto& module : modules(/*include_self=*/false)) {
    if (auto* norm = module->as<RMSNormImpl>()) norm->fused = true;
    if (auto* attention = module->as<AttentionImpl>()) attention->fused_rotary = true;
    if (auto* feed_forward = module->as<FeedForwardImpl>()) feed_forward->fused = true;
  }
  fused_head_ = has_head_ && tp_.size == 1;
}

void StageModule::use_fp8(Fp8Recipe recipe, std::int64_t amax_history_len) {
  if (encoder_)
    throw std::invalid_argument("StageModule::use_fp8: encoders compute in fp8 nowhere");
  for (DecoderLayer& layer : layers_)
    for (const auto& module : layer->modules(/*include_self=*/false))
      if (auto* linear = module->as<SplitLinearImpl>())
        linear->fp8 = std::make_shared<Fp8Scaling>(recipe, amax_history_len);
}

std::vector<torch::Tensor> StageModule::expert_parameters(bool experts) const {
  std::vector<torch::Tensor> out;
  for (const auto& item : named_parameters())
    if (expert_parallel_dim(item.key()).has_value() == experts) out.push_back(item.value());
  return out;
}

std::vector<torch::Tensor> StageModule::replicated_parameters() const {
  std::vector<torch::Tensor> replicated;
  for (const auto& item : named_parameters())
    if (!tensor_parallel_dim(item.key())) replicated.push_back(item.value());
  return replicated;
}

torch::Tensor StageModule::classify(const torch::Tensor& input) {
  if (!encoder_) throw std::logic_error("StageModule::classify: a decoder stage has no classifier");
  TORCH_CHECK(input.dim() == 3 && input.size(1) == 3 && input.scalar_type() == torch::kLong,
              "StageModule: an encoder takes int64 [b, 3, s] (ids, token types, mask), got ",
              input.scalar_type(), " ", input.sizes());
  // In a lower compute dtype the encoder runs under autocast, as transformers' Trainer trains
  // with bf16=True: its linear layers and matmuls in bf16 on cast copies of the fp32 master
  // weights, what autocast keeps in fp32 (softmax, layer_norm, ...) so.
  std::optional<AutocastGuard> autocast;
  if (compute_ != torch::kFloat32) autocast.emplace(input.device().type(), compute_);
  return encoder_(input.select(1, 0), input.select(1, 1), input.select(1, 2)).to(torch::kFloat32);
}

torch::Tensor StageModule::forward(const torch::Tensor& input, const torch::Tensor& targets) {
  if (encoder_) {
    TORCH_CHECK(targets.defined() && targets.dim() == 1 && targets.size(0) == input.size(0),
                "StageModule: an encoder needs int64 labels [b]");
    return torch::nn::functional::cross_entropy(classify(input), targets);
  }
  torch::Tensor x;
  if (has_embedding_) {
    TORCH_CHECK(input.dim() == 2 && input.scalar_type() == torch::kLong,
                "StageModule: a stage with the embedding takes int64 token ids [b, s], got ",
                input.scalar_type(), " ", input.sizes());
    x = (tp_.size > 1 ? vocab_parallel_embedding(input, embed_->weight, tp_) : embed_(input))
            .to(compute_);
  } else {
    TORCH_CHECK(input.dim() == 3 && input.size(2) == spec_.d_model && input.is_floating_point(),
                "StageModule: expected hidden states [b, s, ", spec_.d_model, "], got ",
                input.scalar_type(), " ", input.sizes());
    x = input.to(compute_);
  }
  const std::int64_t head_dim = spec_.d_model / spec_.n_heads;
  const std::int64_t seq_len = x.size(1) * (tp_.sequence_parallel ? tp_.size : 1) * cp_.size;
  auto [cos, sin] = rotary_tables(seq_len, head_dim, kRopeBase, x.options());
  if (cp_.size > 1) {  // the rows of the member's tokens
    const torch::Tensor positions = context_parallel_positions(seq_len, cp_, x.device());
    cos = cos.index_select(0, positions);
    sin = sin.index_select(0, positions);
  }
  for (DecoderLayer& layer : layers_) {
    if (recompute_ != Recompute::Full) {
      x = layer(x, cos, sin);
      continue;
    }
    const RecomputedBody body = [layer, cos, sin](const std::vector<torch::Tensor>& in) mutable {
      return layer(in[0], cos, sin);
    };
    x = recomputed(body, {x});
  }
  if (!has_head_) return x;

  x = enter_parallel_region(norm_(x), tp_);  // [b, s, d]
  TORCH_CHECK(
      targets.defined() && targets.scalar_type() == torch::kLong &&
          targets.sizes() == x.sizes().slice(0, 2),
      "StageModule: a stage with the head needs int64 targets [b, s] = ", x.sizes().slice(0, 2));
  if (fused_head_)
    return fused_linear_cross_entropy(x.reshape({-1, x.size(-1)}), head_->weight,
                                      targets.reshape({-1}));
  const torch::Tensor logits = head_(x).to(torch::kFloat32);  // [b, s, V/t]
  const torch::Tensor rows = logits.reshape({-1, logits.size(-1)});
  if (tp_.size > 1) return vocab_parallel_cross_entropy(rows, targets.reshape({-1}), tp_);
  return torch::nn::functional::cross_entropy(rows, targets.reshape({-1}));
}

std::map<int, MoeFeedForward> StageModule::moe_layers() const {
  std::map<int, MoeFeedForward> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i]->moe) out.emplace(first_layer_ + static_cast<int>(i), layers_[i]->moe);
  return out;
}

void StageModule::set_aux_loss_scale(double scale) {
  for (auto& [layer, moe] : moe_layers()) moe->set_aux_loss_scale(scale);
}

}  // namespace dtwin::nn
