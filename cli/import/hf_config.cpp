// `dtwin import hf`: a Hugging Face config.json as a scenario.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>

#include "base/user_error.hpp"
#include "cli/import/importers.hpp"
#include "models/cost/cost_model.hpp"
#include "models/cost/memory_budget.hpp"
#include "models/cost/step_estimate.hpp"

namespace dtwin::import {
namespace {

using Json = nlohmann::ordered_json;

/// Sequence length taken by default from max_position_embeddings, at most this (a longer context
/// is usually a later training phase, often with context parallelism).
constexpr long long kMaxDefaultSeqLen = 8192;
/// Tokens per microbatch the default micro_batch_size aims at.
constexpr long long kTokensPerMicrobatch = 8192;

/// How dtwin simulates a model_type.
enum class Kind { Llama, Gpt2, Bert, DistilBert };

struct ModelType {
  const char* name;
  Kind kind;
  const char* architecture;  ///< the prefix of its `architectures` entries
};

constexpr ModelType kModelTypes[] = {
    {"llama", Kind::Llama, "LlamaFor"},
    {"mistral", Kind::Llama, "MistralFor"},
    {"mixtral", Kind::Llama, "MixtralFor"},
    {"qwen2", Kind::Llama, "Qwen2For"},
    {"gpt2", Kind::Gpt2, "GPT2"},
    {"bert", Kind::Bert, "BertFor"},
    {"distilbert", Kind::DistilBert, "DistilBertFor"},
};

/// The JSON object of a config.json with the fields it holds (non-null ones, in file order) and
/// which of them have been mapped.
class Config {
 public:
  explicit Config(std::string path) : path_(std::move(path)) {
    std::ifstream in(path_);
    if (!in || !std::filesystem::is_regular_file(path_))
      throw UserError(path_ + ": cannot open the Hugging Face config file");
    std::stringstream text;
    text << in.rdbuf();
    try {
      doc_ = Json::parse(text.str());
    } catch (const Json::parse_error& e) {
      throw UserError(fmt::format("{}: invalid JSON: {}", path_, e.what()));
    }
    if (!doc_.is_object())
      throw UserError(path_ + ": expected a JSON object (a Hugging Face config.json), got " +
                      std::string(doc_.type_name()));
    for (const auto& [key, value] : doc_.items())
      if (!value.is_null()) fields_.add(key);
  }

  const std::string& path() const { return path_; }
  SourceFields& fields() { return fields_; }
  /// Whether the file holds `key` with a non-null value.
  bool has(const std::string& key) const { return fields_.contains(key); }
  /// Marks `key` as mapped.
  void use(const std::string& key) { fields_.use(key); }

  /// [[noreturn]] "PATH: KEY: expected WHAT, got 'VALUE'" (or "missing").
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    if (!has(key)) throw UserError(fmt::format("{}: {}: missing: expected {}", path_, key, what));
    throw UserError(
        fmt::format("{}: {}: expected {}, got '{}'", path_, key, what, doc_.at(key).dump()));
  }

  /// The positive integer at `key`, marked mapped; `what` says what it is for the errors.
  long long positive(const std::string& key, const std::string& what) {
    if (!has(key) || !doc_.at(key).is_number_integer() || doc_.at(key).get<long long>() < 1)
      fail(key, what + ", an integer >= 1");
    use(key);
    return doc_.at(key).get<long long>();
  }
  /// The positive integer at `key` if present (marked mapped), else nullopt.
  std::optional<long long> optional_positive(const std::string& key, const std::string& what) {
    if (!has(key)) return std::nullopt;
    return positive(key, what);
  }
  /// The string at `key`, or "" when absent; not marked.
  std::string string(const std::string& key) const {
    if (!has(key)) return "";
    if (!doc_.at(key).is_string()) fail(key, "a string");
    return doc_.at(key).get<std::string>();
  }
  /// The entries of the JSON object at `key` (0 when absent); not marked.
  std::size_t object_size(const std::string& key) const {
    if (!has(key)) return 0;
    if (!doc_.at(key).is_object()) fail(key, "an object");
    return doc_.at(key).size();
  }
  /// The Boolean at `key`, or `fallback` when absent; not marked.
  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!doc_.at(key).is_boolean()) fail(key, "true or false");
    return doc_.at(key).get<bool>();
  }
  /// The number at `key`, or `fallback` when absent; not marked.
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!doc_.at(key).is_number()) fail(key, "a number");
    return doc_.at(key).get<double>();
  }
  /// The first entry of `architectures`, or "".
  std::string architecture() const {
    if (!has("architectures") || !doc_.at("architectures").is_array() ||
        doc_.at("architectures").empty() || !doc_.at("architectures")[0].is_string())
      return "";
    return doc_.at("architectures")[0].get<std::string>();
  }

 private:
  std::string path_;
  Json doc_;
  SourceFields fields_;
};

const ModelType& model_type_of(Config& c) {
  std::string name = c.string("model_type");
  if (name.empty()) {
    const std::string architecture = c.architecture();
    for (const ModelType& type : kModelTypes)
      if (architecture.rfind(type.architecture, 0) == 0) name = type.name;
    if (name.empty())
      c.fail("model_type",
             "a model type (llama, mistral, mixtral, qwen2, gpt2, bert, distilbert), or an "
             "architecture "
             "dtwin knows in `architectures`");
  }
  for (const ModelType& type : kModelTypes)
    if (name == type.name) return type;
  throw UserError(fmt::format(
      "{}: model_type: expected one of llama, mistral, mixtral, qwen2, gpt2, bert, distilbert (the "
      "families "
      "dtwin's model spec can hold), got '{}'",
      c.path(), name));
}

/// Maps the field `key` when `fits` (its value is what dtwin's family assumes), else records it as
/// unsupported with `why`.
void check(Config& c, const std::string& key, bool fits, const std::string& why) {
  c.use(key);
  if (!fits) c.fields().reject(key, why);
}

/// model.seq_len from the context length `context` (the field `key`): capped at
/// kMaxDefaultSeqLen, with a note.
long long map_seq_len(Config& c, ScenarioDraft& d, const std::string& key) {
  const std::optional<long long> context = c.optional_positive(key, "the context length");
  if (!context) {
    d.set("model.seq_len", 4096, fmt::format("default: no {} in the file", key));
    return d.integer("model.seq_len", 4096);
  }
  if (*context <= kMaxDefaultSeqLen) {
    d.set("model.seq_len", *context, key);
  } else if (d.set("model.seq_len", kMaxDefaultSeqLen,
                   fmt::format("default: {} is {}", key, *context))) {
    d.note(
        fmt::format("{} {}: model.seq_len {} (a pretraining length; the full context is "
                    "--set model.seq_len={}, with context parallelism layout.cp for long ones)",
                    key, *context, kMaxDefaultSeqLen, *context));
  }
  return d.integer("model.seq_len", kMaxDefaultSeqLen);
}

/// The sizes most model types name alike.
struct Sizes {
  long long vocab, hidden, layers, heads, ffn, seq_len;
};

/// Maps vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and
/// max_position_embeddings to their model keys.
Sizes map_sizes(Config& c, ScenarioDraft& d) {
  Sizes s{};
  s.vocab = c.positive("vocab_size", "the vocabulary size");
  d.set("model.vocab_size", s.vocab, "vocab_size");
  s.hidden = c.positive("hidden_size", "the model width");
  d.set("model.d_model", s.hidden, "hidden_size");
  s.layers = c.positive("num_hidden_layers", "the number of layers");
  d.set("model.n_layers", s.layers, "num_hidden_layers");
  s.heads = c.positive("num_attention_heads", "the number of attention heads");
  d.set("model.n_heads", s.heads, "num_attention_heads");
  s.ffn = c.positive("intermediate_size", "the feed-forward width");
  d.set("model.ffn_hidden", s.ffn, "intermediate_size");
  s.seq_len = map_seq_len(c, d, "max_position_embeddings");
  return s;
}

/// A LLaMA-like decoder (llama, mistral, mixtral, qwen2): dtwin's llama family.
void map_llama(Config& c, ScenarioDraft& d, const std::string& type) {
  d.set("model.family", "llama", "model_type " + type);
  const auto [vocab, hidden, layers, heads, ffn, seq_len] = map_sizes(c, d);
  if (const auto kv = c.optional_positive("num_key_value_heads", "the key/value heads"))
    d.set("model.n_kv_heads", *kv, "num_key_value_heads");

  const std::string act = c.string("hidden_act");
  check(c, "hidden_act", act == "silu" || act == "swish",
        fmt::format("'{}': the llama family's feed-forward is SwiGLU (silu), simulated as such",
                    act));
  check(c, "head_dim", c.number("head_dim", 0) * heads == hidden,
        fmt::format("the head width is hidden_size / num_attention_heads = {} in dtwin",
                    heads ? hidden / heads : 0));
  check(c, "attention_bias", !c.boolean("attention_bias", false),
        "the q, k, v (and o) biases are not modelled (a few vectors per layer)");
  check(c, "mlp_bias", !c.boolean("mlp_bias", false),
        "the feed-forward biases are not modelled (a few vectors per layer)");
  check(c, "attention_dropout", c.number("attention_dropout", 0) == 0,
        "dropout is not modelled in the llama family");
  check(c, "tie_word_embeddings", !c.boolean("tie_word_embeddings", false),
        "the llama family's head is untied: its V·d weights are counted apart from the "
        "embedding's (memory, gradients, optimizer states); the FLOPs are the same");
  // Sliding-window attention: no effect where the window holds the whole sequence.
  const bool windowed = type != "qwen2" || c.boolean("use_sliding_window", false);
  if (type == "qwen2") {
    c.use("use_sliding_window");
    if (!windowed) {
      c.use("sliding_window");
      c.use("max_window_layers");
    }
  }
  if (windowed)
    check(c, "sliding_window", c.number("sliding_window", 0) >= double(seq_len),
          fmt::format("a {}-token window: attention is simulated over the whole {}-token "
                      "sequence (dtwin has no sliding-window attention)",
                      c.number("sliding_window", 0), seq_len));
  if (type == "mixtral") {
    const long long experts = c.positive("num_local_experts", "the number of experts");
    d.set("model.moe.num_experts", experts, "num_local_experts");
    d.set("model.moe.top_k", c.positive("num_experts_per_tok", "the experts per token"),
          "num_experts_per_tok");
    d.set("model.moe.expert_ffn_hidden", ffn, "intermediate_size");
    d.set("model.ffn_hidden", ffn, "intermediate_size (unused: every layer is MoE)");
  }
  d.set("model.attention", "flash", "default: flash attention (SDPA)");
}

/// GPT-2: dtwin's gpt2 family.
void map_gpt2(Config& c, ScenarioDraft& d) {
  d.set("model.family", "gpt2", "model_type gpt2");
  d.set("model.vocab_size", c.positive("vocab_size", "the vocabulary size"), "vocab_size");
  const long long width = c.positive("n_embd", "the model width");
  d.set("model.d_model", width, "n_embd");
  d.set("model.n_layers", c.positive("n_layer", "the number of layers"), "n_layer");
  d.set("model.n_heads", c.positive("n_head", "the number of attention heads"), "n_head");
  if (const auto inner = c.optional_positive("n_inner", "the feed-forward width"))
    d.set("model.ffn_hidden", *inner, "n_inner");
  else
    d.set("model.ffn_hidden", 4 * width, "4 · n_embd (n_inner null)");
  const long long seq_len = map_seq_len(c, d, "n_positions");
  check(c, "n_ctx", c.number("n_ctx", 0) == double(seq_len),
        "the context differs from model.seq_len");
  const std::string act = c.string("activation_function");
  check(c, "activation_function", act.rfind("gelu", 0) == 0,
        fmt::format("'{}': the gpt2 family's MLP is GELU, simulated as such", act));
  check(c, "tie_word_embeddings", c.boolean("tie_word_embeddings", true),
        "the gpt2 family's head is tied to the embedding: an untied head's V·d weights are not "
        "counted");
  for (const char* key : {"attn_pdrop", "resid_pdrop"})
    check(c, key, c.number(key, 0.1) > 0,
          "no dropout: the gpt2 family models dropout masks (a few memory-bound operations)");
  d.set("model.attention", "flash", "default: flash attention (SDPA)");
}

/// The sequence classifier's head and positions of an encoder (bert, distilbert): the labels of
/// id2label (2 without), max_position_embeddings rows, and a note when the checkpoint's head is
/// another one (a masked-LM pretraining head): dtwin's encoder families fine-tune a classifier.
void map_classifier_head(Config& c, ScenarioDraft& d, long long seq_len) {
  const long long positions =
      std::max(seq_len, static_cast<long long>(c.number("max_position_embeddings", 0)));
  d.set("model.max_position_embeddings", positions, "max_position_embeddings");
  const std::size_t labels = c.object_size("id2label");
  c.use("id2label");
  c.use("label2id");
  d.set("model.num_labels", labels >= 2 ? static_cast<long long>(labels) : 2,
        labels >= 2 ? "id2label's labels" : "default: 2");
  const std::string architecture = c.architecture();
  c.use("architectures");
  if (architecture.find("SequenceClassification") == std::string::npos)
    d.note(fmt::format(
        "architectures {}: dtwin's encoder families fine-tune a sequence classifier (pooler and "
        "classifier on the first token), not this head",
        architecture.empty() ? "(none)" : architecture));
}

/// A BERT sequence classifier (BertForSequenceClassification): dtwin's bert family.
void map_bert_classifier(Config& c, ScenarioDraft& d) {
  d.set("model.family", "bert", "model_type bert, architectures " + c.architecture());
  const auto [vocab, width, layers, heads, ffn, seq_len] = map_sizes(c, d);
  map_classifier_head(c, d, seq_len);
  check(c, "hidden_act", c.string("hidden_act") == "gelu",
        fmt::format("'{}': the bert family's MLP is the exact GELU", c.string("hidden_act")));
  check(c, "position_embedding_type", c.string("position_embedding_type") == "absolute",
        "the bert family has learned absolute positions");
  check(c, "type_vocab_size", c.number("type_vocab_size", 2) == 2,
        "the bert family has 2 token types");
  check(c, "is_decoder", !c.boolean("is_decoder", false), "the bert family is an encoder");
}

/// A DistilBERT sequence classifier: dtwin's distilbert family.
void map_distilbert(Config& c, ScenarioDraft& d) {
  d.set("model.family", "distilbert", "model_type distilbert");
  d.set("model.vocab_size", c.positive("vocab_size", "the vocabulary size"), "vocab_size");
  d.set("model.d_model", c.positive("dim", "the model width"), "dim");
  d.set("model.n_layers", c.positive("n_layers", "the number of layers"), "n_layers");
  d.set("model.n_heads", c.positive("n_heads", "the number of attention heads"), "n_heads");
  d.set("model.ffn_hidden", c.positive("hidden_dim", "the feed-forward width"), "hidden_dim");
  map_classifier_head(c, d, map_seq_len(c, d, "max_position_embeddings"));
  check(c, "activation", c.string("activation") == "gelu",
        fmt::format("'{}': the distilbert family's MLP is the exact GELU", c.string("activation")));
  check(c, "sinusoidal_pos_embds", !c.boolean("sinusoidal_pos_embds", false),
        "the distilbert family has learned positions");
}

/// BERT pretraining (BertForMaskedLM, BertForPreTraining), simulated as the gpt2 family with
/// eager attention (docs/import.md says why that is the same computation and what is left out).
void map_bert(Config& c, ScenarioDraft& d) {
  if (d.locked("model.attention") && d.text("model.attention") == "flash")
    throw UserError(
        "--set model.attention=flash: model_type bert: expected eager: BERT's attention is "
        "bidirectional, and dtwin times a flash kernel with a causal mask (it skips the masked "
        "blocks); an eager kernel computes every score either way");
  d.set("model.family", "gpt2", "model_type bert (an encoder: see the notes)");
  const auto [vocab, width, layers, heads, ffn, seq] = map_sizes(c, d);
  d.set("model.attention", "eager", "bidirectional attention: see the notes");
  const std::string act = c.string("hidden_act");
  check(c, "hidden_act", act.rfind("gelu", 0) == 0,
        fmt::format("'{}': simulated as the gpt2 family's GELU", act));
  check(c, "position_embedding_type", c.string("position_embedding_type") == "absolute",
        "simulated as learned absolute positions");
  check(c, "tie_word_embeddings", c.boolean("tie_word_embeddings", true),
        "the gpt2 family's head is tied: an untied decoder's V·d weights are not counted");
  for (const char* key : {"attention_probs_dropout_prob", "hidden_dropout_prob"})
    check(c, key, c.number(key, 0.1) > 0,
          "no dropout: the gpt2 family models dropout masks (a few memory-bound operations)");
  check(c, "is_decoder", !c.boolean("is_decoder", false),
        "a causal BERT decoder is simulated with bidirectional (eager) attention");
  c.fields().reject("type_vocab_size",
                    "the token-type embedding (type_vocab_size · d weights) is not modelled");
  // The forward FLOPs per token the gpt2 family counts, against the MLM head's transform.
  const double d2 = double(width) * double(width);
  const double layer = 8 * d2 + 4 * double(width) * double(ffn) + 4 * double(seq) * double(width);
  const double model = double(layers) * layer + 2 * double(vocab) * double(width);
  d.note(
      "model_type bert is an encoder; its masked-LM head (V logits on every token) is not the "
      "sequence classifier of dtwin's bert family (BertForSequenceClassification imports as "
      "that). It is simulated as the gpt2 family (LayerNorm, learned positions, GELU MLP, "
      "attention and residual dropout, "
      "a head tied to the embedding), whose layers run BERT's operations: the same GEMMs, "
      "LayerNorms, GELU, softmax and dropout (post-LN orders them differently, at the same cost).");
  d.note(
      "model.attention eager: BERT's attention is bidirectional; dtwin times a flash kernel as "
      "causal (skipping the masked blocks), while an eager kernel computes every score either "
      "way, so eager attention costs BERT's exactly (and stores the scores, as BERT's eager "
      "attention does).");
  d.note(fmt::format(
      "not simulated: the MLM head's transform (a d x d dense layer, GELU and LayerNorm before "
      "the tied decoder: {:.1f}% of the forward FLOPs), the NSP pooler and classifier (one token "
      "per sequence), the token-type embedding and the embedding LayerNorm. The masked-LM loss "
      "over every position's logits (as BertForPreTraining computes it) costs what the causal LM "
      "loss does.",
      100 * 2 * d2 / model));
}

/// A rough parameter count of the dense model in the draft: 12·L·d² + V·d.
double parameters(const ScenarioDraft& d) {
  const double width = double(d.integer("model.d_model", 1));
  return 12 * double(d.integer("model.n_layers", 1)) * width * width +
         double(d.integer("model.vocab_size", 1)) * width;
}

/// The highest pipeline rank's peak bytes by the closed-form estimate (`dtwin plan`'s judge of a
/// layout), and the bytes of tensors a rank may hold.
std::pair<double, double> estimated_peak(const ScenarioDraft& d) {
  const Scenario scenario = d.load();
  const StepEstimate estimate = estimate_step(scenario, CostModel(scenario));
  const double peak = estimate.peak_bytes.empty() ? 0
                                                  : *std::max_element(estimate.peak_bytes.begin(),
                                                                      estimate.peak_bytes.end());
  return {peak, tensor_memory_per_rank(scenario.cluster)};
}

/// layout.recompute, unless --set gave it: none where the estimated peak fits a rank's memory,
/// else full, with a note when even that does not fit.
void choose_recompute(ScenarioDraft& d) {
  if (d.locked("layout.recompute")) return;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const auto [none, budget] = estimated_peak(d);
  if (none <= budget) return;
  d.set("layout.recompute", "full",
        fmt::format("default: without recomputation the estimated peak, {:.1f} GiB, exceeds the "
                    "{:.1f} GiB a GPU holds for tensors",
                    none / kGiB, budget / kGiB));
  const double full = estimated_peak(d).first;
  if (full > budget)
    d.note(
        fmt::format("the default layout does not fit: {:.1f} GiB per GPU even with full "
                    "recomputation, {:.1f} GiB available; give more GPUs (--set "
                    "cluster.nodes=N) or model parallelism (--set layout.tp=T, layout.pp=P), "
                    "or let `dtwin plan` search",
                    full / kGiB, budget / kGiB));
}

/// The layout over the default cluster: data parallelism over every GPU that tp · pp · cp (1
/// unless --set) leaves, ZeRO-3 (FSDP) for dense models of 1B parameters or more, ZeRO-1 with
/// expert parallelism for MoE, overlapped gradient reduction and parameter gathers.
void default_layout(ScenarioDraft& d) {
  set_default_cluster(d, 1);
  const long long world = cluster_world(d);
  const long long tp = d.integer("layout.tp", 1), pp = d.integer("layout.pp", 1),
                  cp = d.integer("layout.cp", 1);
  if (tp < 1 || pp < 1 || cp < 1 || world % (tp * pp * cp) != 0)
    throw UserError(fmt::format(
        "layout.tp · layout.pp · layout.cp = {}: expected a divisor of the cluster's {} GPUs "
        "(cluster.nodes · cluster.devices_per_node · cluster.ranks_per_device)",
        tp * pp * cp, world));
  const long long dp = world / (tp * pp * cp);
  d.set("layout.dp", dp, "default: the GPUs tp · pp · cp leave");
  d.set("layout.pp", 1LL, "default");
  d.set("layout.schedule", "1f1b", "default");
  const long long seq = d.integer("model.seq_len", kTokensPerMicrobatch);
  d.set("layout.micro_batch_size", std::max(1LL, kTokensPerMicrobatch / seq),
        fmt::format("default: {} tokens per microbatch", kTokensPerMicrobatch));
  d.set("layout.microbatches", 4 * d.integer("layout.pp", 1),
        "default: 4 per pipeline stage (gradient accumulation)");
  const bool moe = d.has("model.moe.num_experts");
  const bool sharded = dp * cp > 1;
  if (moe) {
    const long long experts = d.integer("model.moe.num_experts", 1);
    d.set("layout.zero", sharded ? 1LL : 0LL,
          "default: ZeRO-1 (distributed optimizer) for MoE, which ZeRO-3 is not modelled for");
    d.set("layout.ep", std::gcd(experts, dp * cp),
          "default: the most experts-per-group dp · cp allows");
  } else {
    const bool large = parameters(d) >= 1e9;
    d.set("layout.zero", large && sharded ? 3LL : 0LL,
          large ? "default: ZeRO-3 (FSDP) for a model of 1B parameters or more"
                : "default: plain data parallelism for a model under 1B parameters");
  }
  if (tp > 1) d.set("layout.sequence_parallel", true, "default with tp > 1");
  if (sharded) d.set("layout.overlap_grad_reduce", true, "default");
  if (d.integer("layout.zero", 0) > 0) d.set("layout.overlap_param_gather", true, "default");
  d.set("training.precision", "bf16", "default: bf16 mixed precision");
  choose_recompute(d);
}

/// The scenario's name: the model's Hub name (_name_or_path), else the folder of a config.json,
/// else the file's stem.
std::string model_name(Config& c) {
  const std::string hub = c.string("_name_or_path");
  c.use("_name_or_path");
  if (!hub.empty()) return std::filesystem::path(hub).filename().string();
  const std::filesystem::path path = std::filesystem::absolute(c.path());
  if (path.stem() == "config" && path.has_parent_path())
    return path.parent_path().filename().string();
  return path.stem().string();
}

}  // namespace

ScenarioDraft import_hf(const std::string& path, const std::vector<std::string>& overrides) {
  Config c(path);
  ScenarioDraft d("hf", path);
  d.apply_overrides(overrides);
  const ModelType& type = model_type_of(c);
  c.use("model_type");
  d.name(model_name(c), c.has("_name_or_path") ? "_name_or_path" : "the config's name");
  switch (type.kind) {
    case Kind::Llama:
      map_llama(c, d, type.name);
      break;
    case Kind::Gpt2:
      map_gpt2(c, d);
      break;
    case Kind::Bert:
      if (c.architecture().find("SequenceClassification") != std::string::npos)
        map_bert_classifier(c, d);
      else
        map_bert(c, d);
      break;
    case Kind::DistilBert:
      map_distilbert(c, d);
      break;
  }
  default_layout(d);
  c.fields().report_unused(d);
  return d;
}

}  // namespace dtwin::import
