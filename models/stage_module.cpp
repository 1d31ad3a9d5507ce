#include "models/stage_module.hpp"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "models/param_init.hpp"
#include "models/recompute.hpp"

namespace dtwin::nn {
namespace {

void check_spec(const ModelSpec& spec, int first_layer, int num_layers) {
  const std::string where = "dtwin::nn::StageModule: ";
  if (spec.family != ModelFamily::Llama)
    throw std::invalid_argument(where + "only the llama family is implemented, got '" +
                                std::string(kModelFamilyNames.name(spec.family)) + "'");
  if (spec.vocab_size <= 0 || spec.d_model <= 0 || spec.n_heads <= 0 || spec.ffn_hidden <= 0 ||
      spec.n_layers <= 0)
    throw std::invalid_argument(where + "model dimensions must be positive");
  if (spec.d_model % spec.n_heads != 0 || (spec.d_model / spec.n_heads) % 2 != 0)
    throw std::invalid_argument(where + "d_model (" + std::to_string(spec.d_model) +
                                ") must be n_heads (" + std::to_string(spec.n_heads) +
                                ") times an even head size");
  if (first_layer < 0 || num_layers < 0 || first_layer + num_layers > spec.n_layers)
    throw std::invalid_argument(where + "layers [" + std::to_string(first_layer) + ", " +
                                std::to_string(first_layer + num_layers) + ") outside [0, " +
                                std::to_string(spec.n_layers) + ")");
}

}  // namespace

StageModule::StageModule(const ModelSpec& spec, int first_layer, int num_layers, bool has_embedding,
                         bool has_head, std::uint64_t seed, torch::Device device,
                         torch::ScalarType dtype, Recompute recompute)
    : spec_(spec),
      first_layer_(first_layer),
      num_layers_(num_layers),
      has_embedding_(has_embedding),
      has_head_(has_head),
      recompute_(recompute) {
  check_spec(spec, first_layer, num_layers);
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  if (has_embedding)
    embed_ = register_module("embed", TokenEmbedding(spec.vocab_size, spec.d_model, options));
  layer_dict_ = register_module("layers", torch::nn::ModuleDict());
  for (int i = first_layer; i < first_layer + num_layers; ++i) {
    DecoderLayer layer(spec.d_model, spec.n_heads, spec.ffn_hidden, kNormEps, options,
                       spec.attention, recompute == Recompute::Selective);
    layer_dict_->update({{std::to_string(i), layer.ptr()}});
    layers_.push_back(layer);
  }
  if (has_head) {
    norm_ = register_module("norm", RMSNorm(spec.d_model, kNormEps, options));
    head_ = register_module("head", SplitLinear(spec.d_model, spec.vocab_size, options));
  }
  init_parameters(*this, seed, spec.n_layers);
}

StageModule::StageModule(const Scenario& scenario, const StageCost& stage, torch::Device device,
                         torch::ScalarType dtype)
    : StageModule(scenario.model, stage.first_layer, stage.num_layers, stage.has_embedding,
                  stage.has_head, scenario.training.seed, device, dtype,
                  scenario.layout.recompute) {}

torch::Tensor StageModule::forward(const torch::Tensor& input, const torch::Tensor& targets) {
  torch::Tensor x;
  if (has_embedding_) {
    TORCH_CHECK(input.dim() == 2 && input.scalar_type() == torch::kLong,
                "StageModule: a stage with the embedding takes int64 token ids [b, s], got ",
                input.scalar_type(), " ", input.sizes());
    x = embed_(input);
  } else {
    TORCH_CHECK(input.dim() == 3 && input.size(2) == spec_.d_model && input.is_floating_point(),
                "StageModule: expected hidden states [b, s, ", spec_.d_model, "], got ",
                input.scalar_type(), " ", input.sizes());
    x = input;
  }
  const std::int64_t head_dim = spec_.d_model / spec_.n_heads;
  const auto [cos, sin] = rotary_tables(x.size(1), head_dim, kRopeBase, x.options());
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

  TORCH_CHECK(
      targets.defined() && targets.scalar_type() == torch::kLong &&
          targets.sizes() == x.sizes().slice(0, 2),
      "StageModule: a stage with the head needs int64 targets [b, s] = ", x.sizes().slice(0, 2));
  const torch::Tensor logits = head_(norm_(x)).to(torch::kFloat32);  // [b, s, V]
  return torch::nn::functional::cross_entropy(logits.reshape({-1, spec_.vocab_size}),
                                              targets.reshape({-1}));
}

}  // namespace dtwin::nn
