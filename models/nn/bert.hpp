// BERT-style encoders for sequence classification, as Hugging Face transformers defines them
// (BertForSequenceClassification, DistilBertForSequenceClassification): post-LayerNorm encoder
// layers with bidirectional (unmasked, but padding-masked) multi-head self-attention, exact-erf
// GELU, learned absolute positions, token types (BERT only), and a classification head over the
// first token ([CLS]): BERT's pooler (dense + tanh), DistilBERT's pre-classifier (dense + ReLU),
// then the classifier. Devlin et al. 2019, "BERT"; Sanh et al. 2019, "DistilBERT".
//
// Shapes: b = batch, s = sequence (≤ max_positions), d = hidden, h = heads, hd = d/h,
// f = intermediate, V = vocab, L = num_labels. Parameters are created uninitialised (the caller
// loads a checkpoint or initialises them) and are named by this module; hf_parameter_names maps
// them to the checkpoint names of transformers.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin::nn {

enum class EncoderVariant { Bert, DistilBert };

/// An encoder classifier's shape, as transformers' BertConfig / DistilBertConfig hold it.
struct EncoderConfig {
  EncoderVariant variant = EncoderVariant::Bert;
  std::int64_t vocab_size = 0;       ///< V
  std::int64_t hidden = 0;           ///< d (BERT hidden_size, DistilBERT dim)
  std::int64_t layers = 0;           ///< num_hidden_layers / n_layers
  std::int64_t heads = 0;            ///< num_attention_heads / n_heads; divides d
  std::int64_t intermediate = 0;     ///< f (intermediate_size / hidden_dim)
  std::int64_t max_positions = 0;    ///< max_position_embeddings
  std::int64_t type_vocab_size = 0;  ///< token types (BERT: 2); 0 for DistilBERT
  std::int64_t num_labels = 2;       ///< L
  double layer_norm_eps = 1e-12;     ///< DistilBERT's is fixed at 1e-12
  double dropout = 0.1;              ///< hidden_dropout_prob / dropout (training only)
  double attention_dropout = 0.1;    ///< attention_probs_dropout_prob / attention_dropout
  /// Dropout before the classifier: classifier_dropout (else hidden_dropout_prob) for BERT,
  /// seq_classif_dropout for DistilBERT.
  double classifier_dropout = 0.1;
};

/// One post-LayerNorm encoder layer: x ← LN(x + O·attn(Qx, Kx, Vx)); x ← LN(x + W2·gelu(W1·x)).
class EncoderLayerImpl : public torch::nn::Module {
 public:
  EncoderLayerImpl(const EncoderConfig& config, const torch::TensorOptions& options);
  /// x [b, s, d], keys bool [b, 1, 1, s] (true where a key is a token, false where it is
  /// padding; undefined: every key) -> [b, s, d].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& keys);

  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr}, attention_out{nullptr};
  torch::nn::LayerNorm attention_norm{nullptr};
  torch::nn::Linear ffn_in{nullptr}, ffn_out{nullptr};
  torch::nn::LayerNorm ffn_norm{nullptr};

 private:
  std::int64_t heads_;
  double dropout_, attention_dropout_;
  double attention_output_dropout_;  ///< BERT drops the attention's output, DistilBERT does not
};
TORCH_MODULE(EncoderLayer);

/// The whole classifier: embeddings, `layers` encoder layers, the head.
class EncoderClassifierImpl : public torch::nn::Module {
 public:
  EncoderClassifierImpl(const EncoderConfig& config, const torch::TensorOptions& options);
  /// input_ids int64 [b, s]; token_type_ids int64 [b, s] (undefined: all 0; ignored by
  /// DistilBERT); attention_mask [b, s], 1 for tokens and 0 for padding (undefined: all
  /// tokens) -> logits [b, L] in the parameters' dtype. Throws std::invalid_argument when s
  /// exceeds max_positions or a shape disagrees.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                        const torch::Tensor& attention_mask = {});

  const EncoderConfig& config() const { return config_; }

  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr},
      token_type_embeddings{nullptr};
  torch::nn::LayerNorm embedding_norm{nullptr};
  std::vector<EncoderLayer> encoder_layers;
  torch::nn::Linear pooler{nullptr};  ///< BERT's pooler, DistilBERT's pre_classifier
  torch::nn::Linear classifier{nullptr};

 private:
  EncoderConfig config_;
};
TORCH_MODULE(EncoderClassifier);

/// The classifier of an encoder scenario model (family bert or distilbert): its sizes, 2 token
/// types for bert, transformers' default dropouts (0.1; DistilBERT's classifier 0.2).
EncoderConfig encoder_config(const ModelSpec& spec);

/// Initialises `model` as transformers' BertPreTrainedModel._init_weights does, from `seed`:
/// linear and embedding weights normal with std `std` (initializer_range), the padding row 0 of
/// the token embedding and every bias 0, LayerNorm weights 1. The same values on every device.
void init_encoder(EncoderClassifierImpl& model, std::uint64_t seed, double std = 0.02);

/// Every parameter of EncoderClassifier(config) as (its name in named_parameters(), its name in
/// a transformers checkpoint of the variant), in named_parameters()'s order: e.g.
/// "layer.0.query.weight" -> "bert.encoder.layer.0.attention.self.query.weight" or
/// "distilbert.transformer.layer.0.attention.q_lin.weight".
std::vector<std::pair<std::string, std::string>> hf_parameter_names(const EncoderConfig& config);

}  // namespace dtwin::nn
