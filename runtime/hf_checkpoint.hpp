// Encoder checkpoints in the Hugging Face layout (a folder as transformers' save_pretrained
// writes it): config.json, the weights in model.safetensors or in shards named by
// model.safetensors.index.json's "weight_map", and the tokenizer's files beside them. Read into an
// nn::EncoderClassifier and written back so that transformers' from_pretrained loads them.
#pragma once

#include <string>
#include <vector>

#include "models/nn/bert.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin::rt {

/// What config.json says of an encoder classifier.
struct HfEncoderConfig {
  nn::EncoderConfig model;
  double initializer_range = 0.02;  ///< std of the normal the classifier head starts from
  /// id2label's names in label order ("LABEL_0", ... where config.json gives none); their count
  /// is num_labels.
  std::vector<std::string> labels;
};

/// Reads DIR/config.json: model_type "bert" (hidden_size, num_hidden_layers, num_attention_heads,
/// intermediate_size, max_position_embeddings, type_vocab_size, layer_norm_eps, dropouts) or
/// "distilbert" (dim, n_layers, n_heads, hidden_dim, ...). Labels from id2label, else
/// num_labels, else 2. Throws UserError "DIR/config.json: KEY: expected ..., got ..." for a
/// missing file, another model type, an activation other than exact GELU, relative position
/// embeddings, sinusoidal DistilBERT positions, or a missing or non-positive size.
HfEncoderConfig read_hf_encoder_config(const std::string& dir);

/// Copies the weights of the checkpoint in `dir` into `model` (their dtype converted to the
/// model's). Every parameter must be present with the shape config.json implies, except the
/// classification head (BERT's classifier, DistilBERT's pre_classifier and classifier), which a
/// pretraining checkpoint lacks: it is then initialised as transformers does (weights normal with
/// std `initializer_range`, biases 0) and named in the returned notes, as are tensors the model
/// does not use (a pretraining head's "cls.*"). Legacy LayerNorm names (gamma, beta) are read as
/// weight, bias. Throws UserError "FILE: tensor 'NAME': expected shape [..] (config.json), got
/// [..]" or "DIR: tensor 'NAME': missing" and the read_safetensors errors.
std::vector<std::string> load_hf_encoder(nn::EncoderClassifier& model, const std::string& dir,
                                         double initializer_range = 0.02);

/// Checks that scenario.model.checkpoint's config.json describes the scenario's model:
/// model_type = model.family, and the sizes (vocab_size, d_model, n_layers, n_heads,
/// ffn_hidden, max_position_embeddings, num_labels); returns its initializer_range. Throws
/// UserError "DIR/config.json: KEY: expected V (the scenario's model.K), got W" and
/// read_hf_encoder_config's errors.
double check_scenario_checkpoint(const Scenario& scenario);

/// Loads scenario.model.checkpoint into `model` after check_scenario_checkpoint. Returns
/// load_hf_encoder's notes; throws its errors.
std::vector<std::string> load_scenario_checkpoint(const Scenario& scenario,
                                                  nn::EncoderClassifier& model);

/// Writes `model` to `dir` (created if missing) as transformers writes a
/// BertForSequenceClassification / DistilBertForSequenceClassification: config.json (with
/// `labels` as id2label and label2id) and model.safetensors in the parameters' dtype,
/// with {"format": "pt"}. With `tokenizer_from` set, copies that folder's tokenizer files
/// (tokenizer.json, tokenizer_config.json, vocab.txt, special_tokens_map.json, those present).
/// Throws std::runtime_error when a file cannot be written.
void save_hf_encoder(const nn::EncoderClassifier& model, const std::vector<std::string>& labels,
                     const std::string& dir, const std::string& tokenizer_from = "");

}  // namespace dtwin::rt
