#include "runtime/hf_checkpoint.hpp"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file_writer.hpp"
#include "base/user_error.hpp"
#include "runtime/data/safetensors.hpp"

namespace dtwin::rt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& path) {
  const std::optional<std::string> text = read_file(path);
  if (!text) throw UserError(path.string() + ": cannot be read (expected a JSON file)");
  try {
    json j = json::parse(*text);
    if (!j.is_object()) throw UserError(path.string() + ": expected a JSON object");
    return j;
  } catch (const json::exception& e) {
    throw UserError(path.string() + ": expected JSON: " + e.what());
  }
}

/// A positive integer key of config.json.
std::int64_t size_key(const json& config, const fs::path& path, const std::string& key) {
  if (!config.contains(key) || !config[key].is_number_integer() || config[key].get<long>() <= 0)
    throw UserError(path.string() + ": " + key + ": expected a positive integer, got " +
                    (config.contains(key) ? config[key].dump() : "nothing"));
  return config[key].get<std::int64_t>();
}

/// A number key of config.json in [0, 1) (a dropout probability), `fallback` when absent or null.
double probability_key(const json& config, const fs::path& path, const std::string& key,
                       double fallback) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_number() || config[key].get<double>() < 0 || config[key].get<double>() >= 1)
    throw UserError(path.string() + ": " + key + ": expected a probability in [0, 1), got " +
                    config[key].dump());
  return config[key].get<double>();
}

void expect_string(const json& config, const fs::path& path, const std::string& key,
                   const std::string& expected, const std::string& why) {
  if (!config.contains(key)) return;
  if (!config[key].is_string() || config[key].get<std::string>() != expected)
    throw UserError(path.string() + ": " + key + ": expected '" + expected + "' (" + why +
                    "), got " + config[key].dump());
}

/// The checkpoint's tensors by name, from model.safetensors or the shards of its index; `file`
/// gets the file each came from.
std::map<std::string, at::Tensor> read_weights(const fs::path& dir,
                                               std::map<std::string, std::string>& file) {
  std::map<std::string, at::Tensor> tensors;
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  std::set<std::string> shards;
  if (fs::exists(single)) {
    shards.insert(single.string());
  } else if (fs::exists(index)) {
    const json j = read_json(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw UserError(index.string() + ": weight_map: expected an object of tensor -> file");
    for (const auto& [name, shard] : j["weight_map"].items()) {
      if (!shard.is_string() || fs::path(shard.get<std::string>()).has_parent_path())
        throw UserError(index.string() + ": weight_map: " + name +
                        ": expected a file name in the same folder, got " + shard.dump());
      shards.insert((dir / shard.get<std::string>()).string());
    }
  } else {
    throw UserError(dir.string() +
                    ": expected model.safetensors or model.safetensors.index.json "
                    "(a checkpoint folder as transformers' save_pretrained writes)");
  }
  for (const std::string& shard : shards)
    for (auto& [name, tensor] : read_safetensors(shard)) {
      file[name] = shard;
      tensors[name] = std::move(tensor);
    }
  return tensors;
}

/// The checkpoint name of a parameter as older checkpoints spell LayerNorm's: gamma, beta.
std::string legacy_name(const std::string& name) {
  const auto swap = [&](const std::string& from, const std::string& to) {
    return name.substr(0, name.size() - from.size()) + to;
  };
  if (name.find("LayerNorm") == std::string::npos && name.find("layer_norm") == std::string::npos)
    return "";
  if (name.ends_with(".weight")) return swap("weight", "gamma");
  if (name.ends_with(".bias")) return swap("bias", "beta");
  return "";
}

bool in_head(const nn::EncoderConfig& config, const std::string& ours) {
  return ours.starts_with("classifier.") ||
         (config.variant == nn::EncoderVariant::DistilBert && ours.starts_with("pooler."));
}

}  // namespace

HfEncoderConfig read_hf_encoder_config(const std::string& dir) {
  const fs::path path = fs::path(dir) / "config.json";
  const json c = read_json(path);
  if (!c.contains("model_type") || !c["model_type"].is_string())
    throw UserError(path.string() + ": model_type: expected 'bert' or 'distilbert'");
  const std::string type = c["model_type"].get<std::string>();
  HfEncoderConfig out;
  nn::EncoderConfig& m = out.model;
  m.vocab_size = size_key(c, path, "vocab_size");
  m.max_positions = size_key(c, path, "max_position_embeddings");
  if (type == "bert") {
    m.variant = nn::EncoderVariant::Bert;
    m.hidden = size_key(c, path, "hidden_size");
    m.layers = size_key(c, path, "num_hidden_layers");
    m.heads = size_key(c, path, "num_attention_heads");
    m.intermediate = size_key(c, path, "intermediate_size");
    m.type_vocab_size = c.contains("type_vocab_size") ? size_key(c, path, "type_vocab_size") : 2;
    if (c.contains("layer_norm_eps")) {
      if (!c["layer_norm_eps"].is_number() || c["layer_norm_eps"].get<double>() <= 0)
        throw UserError(path.string() + ": layer_norm_eps: expected a positive number, got " +
                        c["layer_norm_eps"].dump());
      m.layer_norm_eps = c["layer_norm_eps"].get<double>();
    }
    m.dropout = probability_key(c, path, "hidden_dropout_prob", 0.1);
    m.attention_dropout = probability_key(c, path, "attention_probs_dropout_prob", 0.1);
    m.classifier_dropout = probability_key(c, path, "classifier_dropout", m.dropout);
    expect_string(c, path, "hidden_act", "gelu", "the exact erf GELU dtwin's encoder computes");
    expect_string(c, path, "position_embedding_type", "absolute",
                  "learned absolute positions; relative ones are not implemented");
  } else if (type == "distilbert") {
    m.variant = nn::EncoderVariant::DistilBert;
    m.hidden = size_key(c, path, "dim");
    m.layers = size_key(c, path, "n_layers");
    m.heads = size_key(c, path, "n_heads");
    m.intermediate = size_key(c, path, "hidden_dim");
    m.dropout = probability_key(c, path, "dropout", 0.1);
    m.attention_dropout = probability_key(c, path, "attention_dropout", 0.1);
    m.classifier_dropout = probability_key(c, path, "seq_classif_dropout", 0.2);
    expect_string(c, path, "activation", "gelu", "the exact erf GELU dtwin's encoder computes");
    if (c.contains("sinusoidal_pos_embds") && c["sinusoidal_pos_embds"] != false)
      throw UserError(path.string() +
                      ": sinusoidal_pos_embds: expected false (learned positions), got " +
                      c["sinusoidal_pos_embds"].dump());
  } else {
    throw UserError(path.string() + ": model_type: expected 'bert' or 'distilbert', got '" + type +
                    "'");
  }
  if (m.hidden % m.heads != 0)
    throw UserError(path.string() + ": the attention heads (" + std::to_string(m.heads) +
                    ") must divide the hidden size (" + std::to_string(m.hidden) + ")");
  if (c.contains("initializer_range") && c["initializer_range"].is_number())
    out.initializer_range = c["initializer_range"].get<double>();
  if (c.contains("id2label") && c["id2label"].is_object() && !c["id2label"].empty()) {
    const json& names = c["id2label"];
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string key = std::to_string(i);
      if (!names.contains(key) || !names[key].is_string())
        throw UserError(path.string() + ": id2label: expected labels \"0\".." +
                        std::to_string(names.size() - 1) + " as strings, missing \"" + key + "\"");
      out.labels.push_back(names[key].get<std::string>());
    }
  } else {
    const std::int64_t n = c.contains("num_labels") ? size_key(c, path, "num_labels") : 2;
    for (std::int64_t i = 0; i < n; ++i) out.labels.push_back("LABEL_" + std::to_string(i));
  }
  m.num_labels = static_cast<std::int64_t>(out.labels.size());
  return out;
}

std::vector<std::string> load_hf_encoder(nn::EncoderClassifier& model, const std::string& dir,
                                         double initializer_range) {
  std::map<std::string, std::string> file;
  std::map<std::string, at::Tensor> weights = read_weights(dir, file);
  const nn::EncoderConfig& config = model->config();
  const auto params = model->named_parameters();
  std::vector<std::string> notes;
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (const auto& [ours, theirs] : nn::hf_parameter_names(config)) {
    at::Tensor param = params[ours];
    std::string name = theirs;
    if (!weights.count(name) && weights.count(legacy_name(theirs))) name = legacy_name(theirs);
    const auto found = weights.find(name);
    if (found == weights.end()) {
      if (!in_head(config, ours))
        throw UserError(dir + ": tensor '" + theirs + "': missing (expected shape " +
                        c10::str(param.sizes()) + " from config.json)");
      if (ours.ends_with(".bias"))
        param.zero_();
      else
        param.normal_(0, initializer_range);
      notes.push_back(theirs + ": not in the checkpoint, initialised (a new classification head)");
      continue;
    }
    if (found->second.sizes() != param.sizes())
      throw UserError(file[name] + ": tensor '" + name + "': expected shape " +
                      c10::str(param.sizes()) + " (config.json), got " +
                      c10::str(found->second.sizes()));
    param.copy_(found->second);
    used.insert(name);
  }
  for (const auto& [name, tensor] : weights)
    if (!used.count(name))
      notes.push_back(name + ": in the checkpoint, not used by the classifier");
  return notes;
}

double check_scenario_checkpoint(const Scenario& scenario) {
  const std::string& dir = scenario.model.checkpoint;
  const HfEncoderConfig hf = read_hf_encoder_config(dir);
  const nn::EncoderConfig ours = nn::encoder_config(scenario.model);
  const std::string path = (fs::path(dir) / "config.json").string();
  const auto expect = [&](const char* key, std::int64_t theirs, std::int64_t wanted,
                          const char* scenario_key) {
    if (theirs != wanted)
      throw UserError(path + ": " + key + ": expected " + std::to_string(wanted) +
                      " (the scenario's " + scenario_key + "), got " + std::to_string(theirs));
  };
  if (hf.model.variant != ours.variant)
    throw UserError(path + ": model_type: expected '" +
                    std::string(kModelFamilyNames.name(scenario.model.family)) +
                    "' (the scenario's model.family)");
  expect("vocab_size", hf.model.vocab_size, ours.vocab_size, "model.vocab_size");
  expect("hidden size", hf.model.hidden, ours.hidden, "model.d_model");
  expect("layers", hf.model.layers, ours.layers, "model.n_layers");
  expect("attention heads", hf.model.heads, ours.heads, "model.n_heads");
  expect("intermediate size", hf.model.intermediate, ours.intermediate, "model.ffn_hidden");
  expect("max_position_embeddings", hf.model.max_positions, ours.max_positions,
         "model.max_position_embeddings");
  expect("labels (id2label)", hf.model.num_labels, ours.num_labels, "model.num_labels");
  return hf.initializer_range;
}

std::vector<std::string> load_scenario_checkpoint(const Scenario& scenario,
                                                  nn::EncoderClassifier& model) {
  return load_hf_encoder(model, scenario.model.checkpoint, check_scenario_checkpoint(scenario));
}

void save_hf_encoder(const nn::EncoderClassifier& model, const std::vector<std::string>& labels,
                     const std::string& dir, const std::string& tokenizer_from) {
  const nn::EncoderConfig& m = model->config();
  const bool bert = m.variant == nn::EncoderVariant::Bert;
  json c;
  c["architectures"] = {bert ? "BertForSequenceClassification"
                             : "DistilBertForSequenceClassification"};
  c["model_type"] = bert ? "bert" : "distilbert";
  c["vocab_size"] = m.vocab_size;
  c["max_position_embeddings"] = m.max_positions;
  if (bert) {
    c["hidden_size"] = m.hidden;
    c["num_hidden_layers"] = m.layers;
    c["num_attention_heads"] = m.heads;
    c["intermediate_size"] = m.intermediate;
    c["type_vocab_size"] = m.type_vocab_size;
    c["layer_norm_eps"] = m.layer_norm_eps;
    c["hidden_act"] = "gelu";
    c["position_embedding_type"] = "absolute";
    c["hidden_dropout_prob"] = m.dropout;
    c["attention_probs_dropout_prob"] = m.attention_dropout;
    c["classifier_dropout"] = m.classifier_dropout;
  } else {
    c["dim"] = m.hidden;
    c["n_layers"] = m.layers;
    c["n_heads"] = m.heads;
    c["hidden_dim"] = m.intermediate;
    c["activation"] = "gelu";
    c["sinusoidal_pos_embds"] = false;
    c["dropout"] = m.dropout;
    c["attention_dropout"] = m.attention_dropout;
    c["seq_classif_dropout"] = m.classifier_dropout;
  }
  json id2label = json::object(), label2id = json::object();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    id2label[std::to_string(i)] = labels[i];
    label2id[labels[i]] = i;
  }
  c["id2label"] = id2label;
  c["label2id"] = label2id;
  const auto params = model->named_parameters();
  std::map<std::string, at::Tensor> tensors;
  for (const auto& [ours, theirs] : nn::hf_parameter_names(m)) tensors[theirs] = params[ours];
  fs::create_directories(dir);
  write_file(fs::path(dir) / "config.json", c.dump(2) + "\n");
  write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors);
  if (tokenizer_from.empty()) return;
  for (const char* name :
       {"tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"}) {
    const fs::path from = fs::path(tokenizer_from) / name;
    if (fs::exists(from))
      fs::copy_file(from, fs::path(dir) / name, fs::copy_options::overwrite_existing);
  }
}

}  // namespace dtwin::rt
