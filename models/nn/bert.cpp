#include "models/nn/bert.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/dropout.h>

#include <torch/nn/modules/container/modulelist.h>

#include <stdexcept>

namespace dtwin::nn {
namespace {

namespace F = torch::nn::functional;

torch::nn::Linear linear(std::int64_t in, std::int64_t out, const torch::TensorOptions& options) {
  torch::nn::Linear l(torch::nn::LinearOptions(in, out).bias(true));
  l->to(options.device(), options.dtype().toScalarType());
  return l;
}

torch::nn::LayerNorm layer_norm(std::int64_t d, double eps, const torch::TensorOptions& options) {
  torch::nn::LayerNorm n(torch::nn::LayerNormOptions({d}).eps(eps));
  n->to(options.device(), options.dtype().toScalarType());
  return n;
}

torch::nn::Embedding embedding(std::int64_t n, std::int64_t d,
                               const torch::TensorOptions& options) {
  torch::nn::Embedding e(torch::nn::EmbeddingOptions(n, d));
  e->to(options.device(), options.dtype().toScalarType());
  return e;
}

torch::Tensor dropped(const torch::Tensor& x, double p, bool training) {
  return F::dropout(x, F::DropoutFuncOptions().p(p).training(training));
}

}  // namespace

EncoderLayerImpl::EncoderLayerImpl(const EncoderConfig& c, const torch::TensorOptions& options)
    : heads_(c.heads),
      dropout_(c.dropout),
      attention_dropout_(c.attention_dropout),
      attention_output_dropout_(c.variant == EncoderVariant::Bert ? c.dropout : 0) {
  query = register_module("query", linear(c.hidden, c.hidden, options));
  key = register_module("key", linear(c.hidden, c.hidden, options));
  value = register_module("value", linear(c.hidden, c.hidden, options));
  attention_out = register_module("attention_out", linear(c.hidden, c.hidden, options));
  attention_norm =
      register_module("attention_norm", layer_norm(c.hidden, c.layer_norm_eps, options));
  ffn_in = register_module("ffn_in", linear(c.hidden, c.intermediate, options));
  ffn_out = register_module("ffn_out", linear(c.intermediate, c.hidden, options));
  ffn_norm = register_module("ffn_norm", layer_norm(c.hidden, c.layer_norm_eps, options));
}

torch::Tensor EncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& keys) {
  const auto b = x.size(0), s = x.size(1), d = x.size(2), hd = d / heads_;
  const auto split = [&](const torch::Tensor& t) {
    return t.view({b, s, heads_, hd}).transpose(1, 2);  // [b, h, s, hd]
  };
  const torch::Tensor q = split(query(x)), k = split(key(x)), v = split(value(x));
  const torch::Tensor context = at::scaled_dot_product_attention(
      q, k, v, keys, is_training() ? attention_dropout_ : 0.0, /*is_causal=*/false);
  const torch::Tensor merged = context.transpose(1, 2).reshape({b, s, d});
  const torch::Tensor h =
      attention_norm(x + dropped(attention_out(merged), attention_output_dropout_, is_training()));
  const torch::Tensor ffn = ffn_out(F::gelu(ffn_in(h)));
  return ffn_norm(h + dropped(ffn, dropout_, is_training()));
}

EncoderClassifierImpl::EncoderClassifierImpl(const EncoderConfig& c,
                                             const torch::TensorOptions& options)
    : config_(c) {
  if (c.heads <= 0 || c.hidden % c.heads != 0)
    throw std::invalid_argument("EncoderClassifier: heads must divide hidden");
  word_embeddings = register_module("word_embeddings", embedding(c.vocab_size, c.hidden, options));
  position_embeddings =
      register_module("position_embeddings", embedding(c.max_positions, c.hidden, options));
  if (c.variant == EncoderVariant::Bert)
    token_type_embeddings =
        register_module("token_type_embeddings", embedding(c.type_vocab_size, c.hidden, options));
  embedding_norm =
      register_module("embedding_norm", layer_norm(c.hidden, c.layer_norm_eps, options));
  torch::nn::ModuleList layers;  // parameters named "layer.<i>.<name>"
  for (std::int64_t i = 0; i < c.layers; ++i) {
    encoder_layers.emplace_back(c, options);
    layers->push_back(encoder_layers.back());
  }
  register_module("layer", layers);
  pooler = register_module("pooler", linear(c.hidden, c.hidden, options));
  classifier = register_module("classifier", linear(c.hidden, c.num_labels, options));
}

torch::Tensor EncoderClassifierImpl::forward(const torch::Tensor& input_ids,
                                             const torch::Tensor& token_type_ids,
                                             const torch::Tensor& attention_mask) {
  if (input_ids.dim() != 2)
    throw std::invalid_argument("EncoderClassifier: input_ids must be [batch, sequence]");
  const auto b = input_ids.size(0), s = input_ids.size(1);
  if (s > config_.max_positions)
    throw std::invalid_argument("EncoderClassifier: sequence of " + std::to_string(s) +
                                " tokens, the model has " + std::to_string(config_.max_positions) +
                                " positions");
  const auto positions = torch::arange(s, input_ids.options());
  torch::Tensor x = word_embeddings(input_ids) + position_embeddings(positions).unsqueeze(0);
  if (config_.variant == EncoderVariant::Bert)
    x = x + token_type_embeddings(token_type_ids.defined() ? token_type_ids
                                                           : torch::zeros_like(input_ids));
  x = dropped(embedding_norm(x), config_.dropout, is_training());
  torch::Tensor keys;
  if (attention_mask.defined()) {
    if (attention_mask.sizes() != input_ids.sizes())
      throw std::invalid_argument("EncoderClassifier: attention_mask must be [batch, sequence]");
    keys = attention_mask.to(torch::kBool).view({b, 1, 1, s});
  }
  for (EncoderLayer& layer : encoder_layers) x = layer(x, keys);
  const torch::Tensor first = x.select(1, 0);  // [b, d], the [CLS] token
  const torch::Tensor pooled = config_.variant == EncoderVariant::Bert ? torch::tanh(pooler(first))
                                                                       : torch::relu(pooler(first));
  return classifier(dropped(pooled, config_.classifier_dropout, is_training()));
}

EncoderConfig encoder_config(const ModelSpec& spec) {
  EncoderConfig c;
  c.variant = spec.family == ModelFamily::Bert ? EncoderVariant::Bert : EncoderVariant::DistilBert;
  c.vocab_size = spec.vocab_size;
  c.hidden = spec.d_model;
  c.layers = spec.n_layers;
  c.heads = spec.n_heads;
  c.intermediate = spec.ffn_hidden;
  c.max_positions = spec.positions();
  c.type_vocab_size = spec.family == ModelFamily::Bert ? 2 : 0;
  c.num_labels = spec.num_labels;
  c.classifier_dropout = spec.family == ModelFamily::Bert ? 0.1 : 0.2;
  return c;
}

void init_encoder(EncoderClassifierImpl& model, std::uint64_t seed, double std) {
  torch::NoGradGuard no_grad;
  auto generator = at::detail::createCPUGenerator(seed);
  for (const auto& item : model.named_parameters()) {
    torch::Tensor p = item.value();
    const std::string& name = item.key();
    const bool norm = name.find("norm.") != std::string::npos;
    if (name.ends_with(".bias")) {
      p.zero_();
    } else if (norm) {
      p.fill_(1.0);
    } else {
      p.copy_(torch::empty(p.sizes(), torch::kFloat32).normal_(0.0, std, generator));
      if (name == "word_embeddings.weight") p[0].zero_();  // the [PAD] row (pad_token_id 0)
    }
  }
}

std::vector<std::pair<std::string, std::string>> hf_parameter_names(const EncoderConfig& c) {
  const bool bert = c.variant == EncoderVariant::Bert;
  const std::string model = bert ? "bert." : "distilbert.";
  std::vector<std::pair<std::string, std::string>> names;
  const auto add = [&](const std::string& ours, const std::string& theirs) {
    names.emplace_back(ours + ".weight", theirs + ".weight");
    if (ours.find("embeddings") == std::string::npos)
      names.emplace_back(ours + ".bias", theirs + ".bias");
  };
  add("word_embeddings", model + "embeddings.word_embeddings");
  add("position_embeddings", model + "embeddings.position_embeddings");
  if (bert) add("token_type_embeddings", model + "embeddings.token_type_embeddings");
  add("embedding_norm", model + "embeddings.LayerNorm");
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const std::string ours = "layer." + std::to_string(i) + ".";
    const std::string theirs =
        model + (bert ? "encoder.layer." : "transformer.layer.") + std::to_string(i) + ".";
    add(ours + "query", theirs + (bert ? "attention.self.query" : "attention.q_lin"));
    add(ours + "key", theirs + (bert ? "attention.self.key" : "attention.k_lin"));
    add(ours + "value", theirs + (bert ? "attention.self.value" : "attention.v_lin"));
    add(ours + "attention_out", theirs + (bert ? "attention.output.dense" : "attention.out_lin"));
    add(ours + "attention_norm", theirs + (bert ? "attention.output.LayerNorm" : "sa_layer_norm"));
    add(ours + "ffn_in", theirs + (bert ? "intermediate.dense" : "ffn.lin1"));
    add(ours + "ffn_out", theirs + (bert ? "output.dense" : "ffn.lin2"));
    add(ours + "ffn_norm", theirs + (bert ? "output.LayerNorm" : "output_layer_norm"));
  }
  add("pooler", bert ? "bert.pooler.dense" : "pre_classifier");
  add("classifier", "classifier");
  return names;
}

}  // namespace dtwin::nn
