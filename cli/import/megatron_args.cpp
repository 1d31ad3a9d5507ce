// `dtwin import megatron`: Megatron-LM pretrain_gpt.py arguments as a scenario.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>

#include "base/user_error.hpp"
#include "cli/import/importers.hpp"

namespace dtwin::import {
namespace {

/// The pretrain_gpt.py options dtwin maps that take no value (the others it maps take one; an
/// unknown option takes every word up to the next option).
const char* const kFlags[] = {"group-query-attention",
                              "swiglu",
                              "sequence-parallel",
                              "use-distributed-optimizer",
                              "overlap-grad-reduce",
                              "overlap-param-gather",
                              "tp-comm-overlap",
                              "bf16",
                              "fp16",
                              "untie-embeddings-and-output-weights",
                              "disable-bias-linear",
                              "use-flash-attn",
                              "recompute-activations",
                              "use-rotary-position-embeddings",
                              "no-position-embedding",
                              "fp8-param-gather",
                              "grad-reduce-in-bf16",
                              "accumulate-allreduce-grads-in-fp32",
                              "use-torch-fsdp2",
                              "optimizer-cpu-offload"};

/// The pretrain_gpt.py options dtwin maps that take one value.
const char* const kValued[] = {"num-layers",
                               "hidden-size",
                               "ffn-hidden-size",
                               "num-attention-heads",
                               "num-query-groups",
                               "kv-channels",
                               "seq-length",
                               "max-position-embeddings",
                               "micro-batch-size",
                               "global-batch-size",
                               "tensor-model-parallel-size",
                               "pipeline-model-parallel-size",
                               "num-layers-per-virtual-pipeline-stage",
                               "virtual-pipeline-model-parallel-size",
                               "decoder-first-pipeline-num-layers",
                               "decoder-last-pipeline-num-layers",
                               "context-parallel-size",
                               "cp-comm-type",
                               "expert-model-parallel-size",
                               "expert-tensor-parallel-size",
                               "num-experts",
                               "moe-router-topk",
                               "moe-ffn-hidden-size",
                               "moe-shared-expert-intermediate-size",
                               "moe-layer-freq",
                               "moe-router-score-function",
                               "moe-expert-capacity-factor",
                               "recompute-granularity",
                               "recompute-method",
                               "recompute-num-layers",
                               "fp8-format",
                               "fp8-recipe",
                               "normalization",
                               "position-embedding-type",
                               "vocab-size",
                               "tokenizer-type",
                               "tokenizer-model",
                               "vocab-file",
                               "merge-file",
                               "make-vocab-size-divisible-by",
                               "attention-backend",
                               "train-iters",
                               "lr",
                               "seed",
                               "optimizer",
                               "save-interval",
                               "ddp-bucket-size",
                               "num-distributed-optimizer-instances",
                               "optimizer-offload-fraction",
                               "distributed-backend",
                               "distributed-timeout-minutes"};

enum class Arity { Flag, One, Any };

Arity arity_of(const std::string& name) {
  for (const char* flag : kFlags)
    if (name == flag) return Arity::Flag;
  for (const char* valued : kValued)
    if (name == valued) return Arity::One;
  return Arity::Any;
}

/// The options of a pretrain_gpt.py command line (the last of a repeated option wins, as with
/// argparse) and of its launcher, with which of them have been mapped.
class Args {
 public:
  Args(const std::vector<std::string>& words, std::string source) : source_(std::move(source)) {
    std::size_t start = 0;
    // The script: the first word ending in .py; the words before it are its launcher's.
    for (std::size_t i = 0; i < words.size(); ++i)
      if (words[i].size() > 3 && words[i].compare(words[i].size() - 3, 3, ".py") == 0) {
        script_ = words[i];
        read_launcher(std::vector<std::string>(words.begin(), words.begin() + i));
        start = i + 1;
        break;
      }
    read_options(std::vector<std::string>(words.begin() + start, words.end()));
  }

  const std::string& source() const { return source_; }
  /// The script the launcher ran ("" when the words were pretrain_gpt.py's arguments alone).
  const std::string& script() const { return script_; }
  /// The launcher's --nproc_per_node and --nnodes, where given.
  std::optional<long long> nproc_per_node, nnodes;

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  /// Whether the flag `name` was given; marks it mapped.
  bool flag(const std::string& name) {
    fields_.use("--" + name);
    return has(name);
  }
  /// The value of `name`, or nullopt; marks it mapped.
  std::optional<std::string> text(const std::string& name) {
    fields_.use("--" + name);
    if (!has(name)) return std::nullopt;
    return values_.at(name);
  }
  /// The integer value of `name` (at least `min`), or nullopt; marks it mapped.
  std::optional<long long> integer(const std::string& name, long long min = 1) {
    const std::optional<std::string> value = text(name);
    if (!value) return std::nullopt;
    try {
      std::size_t end = 0;
      const long long n = std::stoll(*value, &end);
      if (end == value->size() && n >= min) return n;
    } catch (const std::exception&) {
    }
    throw UserError(
        fmt::format("{}: --{}: expected an integer >= {}, got '{}'", source_, name, min, *value));
  }
  /// The required integer `name`.
  long long required(const std::string& name, const std::string& what) {
    const std::optional<long long> value = integer(name);
    if (!value)
      throw UserError(fmt::format("{}: --{}: missing: expected {} (pretrain_gpt.py requires it)",
                                  source_, name, what));
    return *value;
  }
  /// The number value of `name` (> 0), or nullopt; marks it mapped.
  std::optional<double> number(const std::string& name) {
    const std::optional<std::string> value = text(name);
    if (!value) return std::nullopt;
    try {
      std::size_t end = 0;
      const double x = std::stod(*value, &end);
      if (end == value->size() && x > 0) return x;
    } catch (const std::exception&) {
    }
    throw UserError(
        fmt::format("{}: --{}: expected a number > 0, got '{}'", source_, name, *value));
  }
  /// The value of `name` if it is one of `choices`, else throws; nullopt when absent.
  std::optional<std::string> choice(const std::string& name,
                                    const std::vector<std::string>& choices) {
    const std::optional<std::string> value = text(name);
    if (value && std::find(choices.begin(), choices.end(), *value) == choices.end()) {
      std::string list;
      for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
      throw UserError(
          fmt::format("{}: --{}: expected one of {}, got '{}'", source_, name, list, *value));
    }
    return value;
  }
  /// Reports the option `name`, if given, as unsupported with `why`.
  void reject(const std::string& name, const std::string& why) { fields_.reject("--" + name, why); }
  void report_unused(ScenarioDraft& d) const { fields_.report_unused(d); }

 private:
  void read_launcher(const std::vector<std::string>& words) {
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::string& word = words[i];
      if (word.rfind("--", 0) != 0) continue;  // the program, a value, python's -m ...
      const auto eq = word.find('=');
      const std::string name = word.substr(2, eq == std::string::npos ? eq : eq - 2);
      std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (eq == std::string::npos && i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0)
        value = words[i + 1];
      std::optional<long long>* target = nullptr;
      if (name == "nproc_per_node" || name == "nproc-per-node") target = &nproc_per_node;
      if (name == "nnodes") target = &nnodes;
      if (target == nullptr) {
        fields_.add("launcher --" + name);
        continue;
      }
      try {
        std::size_t end = 0;
        const long long n = std::stoll(value, &end);
        if (end == value.size() && n >= 1) {
          *target = n;
          continue;
        }
      } catch (const std::exception&) {
      }
      throw UserError(fmt::format("{}: launcher --{}: expected an integer >= 1, got '{}'", source_,
                                  name, value));
    }
  }

  void read_options(const std::vector<std::string>& words) {
    for (std::size_t i = 0; i < words.size();) {
      const std::string& word = words[i];
      if (word.rfind("--", 0) != 0 || word.size() == 2)
        throw UserError(fmt::format("{}: '{}': expected an option (--name){}", source_, word,
                                    i == 0 ? "" : fmt::format(" after '{}'", words[i - 1])));
      const auto eq = word.find('=');
      const std::string name = word.substr(2, eq == std::string::npos ? eq : eq - 2);
      std::vector<std::string> values;
      if (eq != std::string::npos) values.push_back(word.substr(eq + 1));
      for (++i; i < words.size() && words[i].rfind("--", 0) != 0; ++i) values.push_back(words[i]);
      const Arity arity = arity_of(name);
      if (arity == Arity::Flag && !values.empty())
        throw UserError(fmt::format("{}: --{}: expected no value (a flag), got '{}'", source_, name,
                                    values.front()));
      if (arity == Arity::One && values.size() != 1)
        throw UserError(fmt::format(
            "{}: --{}: expected one value, got {}", source_, name,
            values.empty() ? std::string("none") : fmt::format("'{}'", fmt::join(values, " "))));
      fields_.add("--" + name);
      values_[name] = values.empty() ? "" : values.front();
    }
  }

  std::string source_;
  std::string script_;
  std::map<std::string, std::string> values_;
  SourceFields fields_;
};

/// Vocabulary size: --vocab-size, or a tokenizer whose size is known, padded as Megatron pads it
/// (to a multiple of --make-vocab-size-divisible-by · tp).
void map_vocab(Args& a, ScenarioDraft& d, long long tp) {
  const std::optional<long long> divisible = a.integer("make-vocab-size-divisible-by");
  const std::optional<long long> given = a.integer("vocab-size");
  const std::string tokenizer = a.text("tokenizer-type").value_or("");
  const std::string vocab_file = a.text("vocab-file").value_or("");
  a.text("merge-file");
  a.text("tokenizer-model");
  long long vocab = 0;
  std::string origin;
  if (given) {
    vocab = *given, origin = "--vocab-size";
  } else if (tokenizer == "GPT2BPETokenizer" ||
             (tokenizer.empty() && vocab_file.find("gpt2-vocab") != std::string::npos)) {
    vocab = 50257, origin = "GPT-2's BPE (50257 tokens)";
  } else if (tokenizer == "Llama2Tokenizer") {
    vocab = 32000, origin = "--tokenizer-type Llama2Tokenizer (32000 tokens)";
  } else if (d.locked("model.vocab_size")) {
    return;
  } else {
    throw UserError(fmt::format(
        "{}: --vocab-size: missing: expected the vocabulary size: --vocab-size N, --tokenizer-type "
        "GPT2BPETokenizer or Llama2Tokenizer, or --set model.vocab_size=N (the size of{} is not "
        "in the arguments)",
        a.source(),
        tokenizer.empty() ? " the tokenizer" : fmt::format(" tokenizer {}", tokenizer)));
  }
  const long long multiple = divisible.value_or(128) * tp;
  const long long padded = (vocab + multiple - 1) / multiple * multiple;
  d.set("model.vocab_size", padded,
        padded == vocab ? origin
                        : fmt::format("{}, padded to a multiple of {} · tp as Megatron pads it",
                                      origin, divisible.value_or(128)));
}

/// The model: sizes, family (llama with --swiglu, else gpt2), attention, MoE.
void map_model(Args& a, ScenarioDraft& d, long long tp) {
  const long long layers = a.required("num-layers", "the number of layers");
  const long long hidden = a.required("hidden-size", "the model width");
  const long long heads = a.required("num-attention-heads", "the number of attention heads");
  const bool swiglu = a.flag("swiglu");
  d.set("model.family", swiglu ? "llama" : "gpt2",
        swiglu ? "--swiglu" : "no --swiglu: a GELU MLP, LayerNorm, learned positions");
  map_vocab(a, d, tp);
  d.set("model.d_model", hidden, "--hidden-size");
  d.set("model.n_layers", layers, "--num-layers");
  d.set("model.n_heads", heads, "--num-attention-heads");
  if (const auto ffn = a.integer("ffn-hidden-size"))
    d.set("model.ffn_hidden", *ffn, "--ffn-hidden-size");
  else if (swiglu)
    d.set("model.ffn_hidden", (4 * hidden * 2 / 3) / 64 * 64,
          "Megatron's default with --swiglu: 8/3 · hidden, a multiple of 64");
  else
    d.set("model.ffn_hidden", 4 * hidden, "Megatron's default: 4 · hidden");
  const long long seq = a.required("seq-length", "the sequence length");
  d.set("model.seq_len", seq, "--seq-length");
  const std::optional<long long> positions = a.integer("max-position-embeddings");
  if (a.flag("group-query-attention")) {
    d.set("model.n_kv_heads", a.integer("num-query-groups").value_or(1),
          "--num-query-groups (with --group-query-attention)");
  } else {
    a.reject("num-query-groups", "ignored without --group-query-attention, as Megatron does");
  }
  if (const auto kv = a.integer("kv-channels"); kv && *kv * heads != hidden)
    a.reject("kv-channels",
             fmt::format("the head width is hidden / heads = {} in dtwin", hidden / heads));

  // What the family assumes, against what the arguments say.
  const std::string norm =
      a.choice("normalization", {"LayerNorm", "RMSNorm"}).value_or("LayerNorm");
  std::string position = a.text("position-embedding-type").value_or("learned_absolute");
  if (a.flag("use-rotary-position-embeddings")) position = "rope";
  if (a.flag("no-position-embedding") && position == "learned_absolute") position = "none";
  const bool untied = a.flag("untie-embeddings-and-output-weights");
  const bool no_bias = a.flag("disable-bias-linear");
  if (swiglu) {
    if (norm != "RMSNorm")
      a.reject("normalization", "LayerNorm: simulated as the llama family's RMSNorm");
    if (position != "rope")
      a.reject("position-embedding-type",
               position + ": simulated as the llama family's rotary embeddings");
    if (!untied)
      d.note(
          "no --untie-embeddings-and-output-weights: Megatron ties the output layer to the "
          "embedding; the llama family counts an untied head's V·d weights (memory, "
          "gradients, optimizer states; the same FLOPs)");
    if (!no_bias)
      d.note(
          "no --disable-bias-linear: the linear layers' biases (a few vectors per layer) are "
          "not modelled by the llama family");
  } else {
    if (norm != "LayerNorm")
      a.reject("normalization", "RMSNorm: simulated as the gpt2 family's LayerNorm");
    if (position != "learned_absolute")
      a.reject("position-embedding-type",
               position + ": simulated as the gpt2 family's learned positions");
    if (untied)
      a.reject("untie-embeddings-and-output-weights",
               "the gpt2 family's head is tied: the untied head's V·d weights are not counted");
    if (no_bias)
      a.reject("disable-bias-linear", "the gpt2 family counts the linear layers' biases");
    if (positions && *positions != seq)
      d.note(
          fmt::format("--max-position-embeddings {}: the gpt2 family's position table holds "
                      "model.seq_len = {} rows",
                      *positions, seq));
  }
  // Dropout (Megatron's default 0.1): the gpt2 family models its masks, the llama family none.
  for (const char* name : {"attention-dropout", "hidden-dropout"}) {
    const std::string value = a.text(name).value_or("0.1");
    const bool zero = value.find_first_not_of("0.") == std::string::npos;
    if (swiglu && !zero) a.reject(name, "dropout is not modelled in the llama family");
    if (!swiglu && zero) a.reject(name, "no dropout: the gpt2 family models dropout masks anyway");
  }
  const std::optional<std::string> backend =
      a.choice("attention-backend", {"flash", "fused", "unfused", "local", "auto"});
  const bool eager = backend && (*backend == "unfused" || *backend == "local");
  d.set("model.attention", eager ? "eager" : "flash",
        backend ? "--attention-backend " + *backend
                : (a.flag("use-flash-attn") ? "--use-flash-attn"
                                            : "default: Megatron-Core's fused/flash attention"));
  a.flag("use-flash-attn");

  if (const auto experts = a.integer("num-experts")) {
    d.set("model.moe.num_experts", *experts, "--num-experts");
    d.set("model.moe.top_k", a.integer("moe-router-topk").value_or(2),
          a.has("moe-router-topk") ? "--moe-router-topk" : "Megatron's default --moe-router-topk");
    d.set("model.moe.expert_ffn_hidden",
          a.integer("moe-ffn-hidden-size").value_or(d.integer("model.ffn_hidden", 1)),
          a.has("moe-ffn-hidden-size") ? "--moe-ffn-hidden-size" : "--ffn-hidden-size");
    if (const auto shared = a.integer("moe-shared-expert-intermediate-size"))
      d.set("model.moe.shared_expert_ffn_hidden", *shared, "--moe-shared-expert-intermediate-size");
    if (const auto router = a.choice("moe-router-score-function", {"softmax", "sigmoid"}))
      d.set("model.moe.router", *router, "--moe-router-score-function");
    if (const auto factor = a.number("moe-expert-capacity-factor"))
      d.set("model.moe.capacity_factor", *factor, "--moe-expert-capacity-factor");
    if (const auto freq = a.text("moe-layer-freq")) {
      // "1" (every layer) or "([0]*K+[1]*N)": the first K layers dense.
      std::string compact;
      for (const char c : *freq)
        if (c != ' ') compact += c;
      long long dense = 0, moe = 0;
      int used = 0;
      if (compact == "1") {
        d.set("model.moe.first_dense_layers", 0LL, "--moe-layer-freq 1");
      } else if (std::sscanf(compact.c_str(), "([0]*%lld+[1]*%lld)%n", &dense, &moe, &used) == 2 &&
                 used == int(compact.size()) && dense + moe == layers) {
        d.set("model.moe.first_dense_layers", dense, "--moe-layer-freq");
      } else {
        a.reject("moe-layer-freq",
                 "only 1 or ([0]*K+[1]*N) (K dense layers first) is mapped: every layer is "
                 "simulated as MoE");
      }
    }
  } else {
    for (const char* name :
         {"moe-router-topk", "moe-ffn-hidden-size", "moe-shared-expert-intermediate-size",
          "moe-router-score-function", "moe-expert-capacity-factor", "moe-layer-freq"})
      a.reject(name, "no --num-experts");
  }
}

/// Precision, optimizer and the training loop.
void map_training(Args& a, ScenarioDraft& d) {
  const std::optional<std::string> fp8 = a.choice("fp8-format", {"hybrid", "e4m3"});
  const bool fp16 = a.flag("fp16");
  if (fp8) {
    d.set("training.precision", "fp8", "--fp8-format " + *fp8);
    if (const auto recipe = a.choice("fp8-recipe", {"delayed", "tensorwise", "blockwise", "mxfp8"}))
      d.set("training.fp8_recipe", *recipe, "--fp8-recipe");
    if (a.flag("fp8-param-gather")) d.set("training.fp8_param_gather", true, "--fp8-param-gather");
  } else {
    a.reject("fp8-recipe", "no --fp8-format");
    a.reject("fp8-param-gather", "no --fp8-format");
  }
  if (a.flag("bf16")) {
    if (!fp8) d.set("training.precision", "bf16", "--bf16");
  } else if (fp16) {
    if (!fp8) d.set("training.precision", "bf16", "--fp16 (simulated as bf16)");
    a.reject("fp16",
             "dtwin has no fp16: simulated as bf16 (the same tensor-core rate on A100 and "
             "H100; loss scaling is not modelled)");
  } else if (!fp8) {
    d.set("training.precision", "fp32", "default: neither --bf16 nor --fp16");
  }
  if (a.flag("grad-reduce-in-bf16"))
    d.set("training.grad_precision", "bf16", "--grad-reduce-in-bf16");
  a.flag("accumulate-allreduce-grads-in-fp32");  // dtwin's default (fp32), as Megatron's for bf16
  const std::string optimizer = a.text("optimizer").value_or("adam");
  if (optimizer == "adam") {
    d.set("training.optimizer", "adamw",
          a.has("optimizer") ? "--optimizer adam (AdamW)"
                             : "Megatron's default --optimizer adam (AdamW)");
  } else {
    a.reject("optimizer", optimizer + ": simulated as AdamW (its states and step)");
  }
  if (const auto lr = a.number("lr")) d.set("training.lr", *lr, "--lr");
  if (const auto seed = a.integer("seed", 0)) d.set("training.seed", *seed, "--seed");
  if (const auto iters = a.integer("train-iters")) d.set("training.steps", *iters, "--train-iters");
  if (const auto every = a.integer("save-interval"))
    d.set("training.checkpoint_every", *every, "--save-interval");
  if (const auto backend = a.choice("distributed-backend", {"nccl", "gloo"}))
    d.set("runtime.backend", *backend, "--distributed-backend");
  if (const auto minutes = a.integer("distributed-timeout-minutes"))
    d.set("runtime.timeout_s", *minutes * 60, "--distributed-timeout-minutes (in seconds)");
}

/// The layout: model-parallel degrees from the arguments, data parallelism over the rest of the
/// cluster (the launcher's size, --set, or the fewest 8-GPU nodes that tp · pp · cp fits),
/// microbatches from the global batch.
void map_layout(Args& a, ScenarioDraft& d, long long tp) {
  const long long pp = a.integer("pipeline-model-parallel-size").value_or(1);
  const long long cp = a.integer("context-parallel-size").value_or(1);
  const long long layers = d.integer("model.n_layers", 1);
  if (tp > 1) d.set("layout.tp", tp, "--tensor-model-parallel-size");
  d.set("layout.pp", pp,
        a.has("pipeline-model-parallel-size") ? "--pipeline-model-parallel-size" : "default: 1");
  if (cp > 1) d.set("layout.cp", cp, "--context-parallel-size");
  if (const auto type = a.choice("cp-comm-type", {"p2p", "allgather", "a2a", "a2a+p2p"})) {
    if (*type == "a2a+p2p")
      a.reject("cp-comm-type", "a2a+p2p (hierarchical): simulated as p2p");
    else if (cp > 1)
      d.set("layout.cp_comm_type", *type == "allgather" ? "all_gather" : *type, "--cp-comm-type");
  }

  // The cluster: the launcher's, else the fewest 8-GPU nodes a model-parallel group fits.
  const long long group = tp * pp * cp;
  const long long per_node = a.nproc_per_node.value_or(d.integer("cluster.devices_per_node", 8));
  set_default_cluster(d, a.nnodes.value_or(std::lcm(group, per_node) / per_node));
  if (a.nnodes) d.set("cluster.nodes", *a.nnodes, "launcher --nnodes");
  if (a.nproc_per_node)
    d.set("cluster.devices_per_node", *a.nproc_per_node, "launcher --nproc_per_node");
  const long long world = cluster_world(d);
  tp = d.integer("layout.tp", 1);
  const long long model_parallel = tp * d.integer("layout.pp", 1) * d.integer("layout.cp", 1);
  if (world % model_parallel != 0)
    throw UserError(fmt::format(
        "{}: tensor · pipeline · context parallel sizes = {}: expected a divisor of the "
        "cluster's {} GPUs (the launcher's --nnodes · --nproc_per_node, or --set cluster.nodes)",
        a.source(), model_parallel, world));
  const long long dp = world / model_parallel;
  d.set("layout.dp", dp, "the GPUs tp · pp · cp leave (Megatron's data-parallel size)");

  long long virtual_stages = 1;
  if (const auto per_stage = a.integer("num-layers-per-virtual-pipeline-stage")) {
    if (layers % (pp * *per_stage) != 0)
      throw UserError(fmt::format(
          "{}: --num-layers-per-virtual-pipeline-stage {}: expected a divisor of num-layers / "
          "pipeline size = {} / {}",
          a.source(), *per_stage, layers, pp));
    virtual_stages = layers / (pp * *per_stage);
  }
  if (const auto v = a.integer("virtual-pipeline-model-parallel-size")) virtual_stages = *v;
  if (virtual_stages > 1) {
    d.set("layout.virtual_stages", virtual_stages,
          a.has("virtual-pipeline-model-parallel-size")
              ? "--virtual-pipeline-model-parallel-size"
              : "num-layers / (pp · --num-layers-per-virtual-pipeline-stage)");
    d.set("layout.schedule", "interleaved-1f1b", "Megatron's schedule with virtual stages");
  } else {
    d.set("layout.schedule", "1f1b", "Megatron's schedule without virtual stages");
  }
  const std::optional<long long> first = a.integer("decoder-first-pipeline-num-layers", 0);
  const std::optional<long long> last = a.integer("decoder-last-pipeline-num-layers", 0);
  if ((first || last) && virtual_stages == 1 && pp > 1) {
    const long long middle_stages = pp - (first ? 1 : 0) - (last ? 1 : 0);
    const long long rest = layers - first.value_or(0) - last.value_or(0);
    if (rest < 0 || (middle_stages > 0 ? rest % middle_stages != 0 : rest != 0))
      throw UserError(fmt::format(
          "{}: --decoder-first/last-pipeline-num-layers: expected the other {} stages to share "
          "the remaining {} layers evenly",
          a.source(), middle_stages, rest));
    YAML::Node stages(YAML::NodeType::Sequence);
    for (long long s = 0; s < pp; ++s) {
      if (s == 0 && first)
        stages.push_back(*first);
      else if (s == pp - 1 && last)
        stages.push_back(*last);
      else
        stages.push_back(rest / middle_stages);
    }
    d.set("layout.stage_layers", stages, "--decoder-first/last-pipeline-num-layers");
  } else if (first || last) {
    a.reject(first ? "decoder-first-pipeline-num-layers" : "decoder-last-pipeline-num-layers",
             "mapped without virtual stages only: layers split evenly");
  }

  const long long mbs = a.integer("micro-batch-size").value_or(1);
  d.set("layout.micro_batch_size", mbs,
        a.has("micro-batch-size") ? "--micro-batch-size" : "default: 1");
  const long long replicas = d.integer("layout.dp", dp);
  const long long global = a.integer("global-batch-size").value_or(mbs * replicas);
  if (!d.locked("layout.microbatches") && global % (mbs * replicas) != 0)
    throw UserError(fmt::format(
        "{}: --global-batch-size {}: expected a multiple of micro-batch-size · data-parallel size "
        "= {} · {} (dp = the cluster's {} GPUs / tp · pp · cp); --set cluster.nodes=N or "
        "layout.microbatches=M",
        a.source(), global, mbs, replicas, world));
  d.set("layout.microbatches", global / (mbs * replicas),
        a.has("global-batch-size") ? "--global-batch-size / (micro-batch-size · dp)"
                                   : "Megatron's default global batch: micro-batch-size · dp");

  // Data-parallel sharding and overlap.
  const bool sharded = replicas * d.integer("layout.cp", 1) > 1;
  const bool fsdp = a.flag("use-torch-fsdp2");
  const bool distributed = a.flag("use-distributed-optimizer");
  if ((fsdp || distributed) && !sharded) {
    d.note("ZeRO left at 0: the data-parallel group (dp · cp) is one GPU");
  } else if (fsdp) {
    d.set("layout.zero", 3LL, "--use-torch-fsdp2");
  } else if (distributed) {
    d.set("layout.zero", 1LL, "--use-distributed-optimizer");
  }
  if (const auto instances = a.integer("num-distributed-optimizer-instances");
      instances && *instances > 1 && replicas % *instances == 0)
    d.set("layout.dp_shard", replicas / *instances, "dp / --num-distributed-optimizer-instances");
  if (a.flag("sequence-parallel") && tp > 1)
    d.set("layout.sequence_parallel", true, "--sequence-parallel");
  if (a.flag("tp-comm-overlap")) d.set("layout.tp_comm_overlap", true, "--tp-comm-overlap");
  if (a.flag("overlap-grad-reduce") && sharded)
    d.set("layout.overlap_grad_reduce", true, "--overlap-grad-reduce");
  if (a.flag("overlap-param-gather")) {
    if (d.integer("layout.zero", 0) > 0)
      d.set("layout.overlap_param_gather", true, "--overlap-param-gather");
    else
      a.reject("overlap-param-gather", "needs a sharded optimizer (ZeRO > 0)");
  }
  if (const auto params = a.integer("ddp-bucket-size")) {
    const long long bytes = d.text("training.grad_precision") == "bf16" ? 2 : 4;
    d.set("layout.bucket_size", *params * bytes, "--ddp-bucket-size (parameters, as bytes)");
  }
  if (const auto experts = d.integer("model.moe.num_experts", 0); experts > 0) {
    if (const auto ep = a.integer("expert-model-parallel-size"))
      d.set("layout.ep", *ep, "--expert-model-parallel-size");
    if (const auto etp = a.integer("expert-tensor-parallel-size"))
      d.set("layout.etp", *etp, "--expert-tensor-parallel-size");
  } else {
    a.reject("expert-model-parallel-size", "no --num-experts");
    a.reject("expert-tensor-parallel-size", "no --num-experts");
  }

  // Recomputation.
  const std::optional<std::string> granularity =
      a.choice("recompute-granularity", {"full", "selective"});
  if (granularity) {
    d.set("layout.recompute", *granularity, "--recompute-granularity");
    const std::string method = a.choice("recompute-method", {"uniform", "block"}).value_or("");
    const long long stage_layers = layers / (pp * virtual_stages);
    const long long count = a.integer("recompute-num-layers").value_or(1);
    if (*granularity == "full" && method == "block" && count < stage_layers)
      a.reject("recompute-num-layers",
               fmt::format("{} of each stage's {} layers: dtwin recomputes every layer", count,
                           stage_layers));
    if (*granularity == "full" && method == "uniform" && count > 1)
      a.reject("recompute-num-layers",
               fmt::format("groups of {} layers: simulated as each layer recomputed alone", count));
  } else {
    if (a.flag("recompute-activations"))
      d.set("layout.recompute", "selective", "--recompute-activations");
    a.reject("recompute-method", "no --recompute-granularity");
    a.reject("recompute-num-layers", "no --recompute-granularity");
  }

  if (a.flag("optimizer-cpu-offload")) {
    d.set("layout.offload", "optimizer", "--optimizer-cpu-offload");
    d.set("cluster.device.host_link.bandwidth", "64GB/s", "default: PCIe 5.0 x16");
    d.set("cluster.device.host_link.latency", "10us", "default");
    if (const auto fraction = a.number("optimizer-offload-fraction"); fraction && *fraction < 1)
      a.reject("optimizer-offload-fraction",
               "a part of the optimizer offloaded: simulated as all of it");
  } else {
    a.reject("optimizer-offload-fraction", "no --optimizer-cpu-offload");
  }
}

}  // namespace

ScenarioDraft import_megatron(const std::vector<std::string>& words, const std::string& source,
                              const std::string& name, const std::vector<std::string>& overrides) {
  Args a(words, source);
  ScenarioDraft d("megatron", source);
  d.apply_overrides(overrides);
  const std::string script = a.script();
  if (script.find("bert") != std::string::npos || script.find("t5") != std::string::npos)
    throw UserError(
        fmt::format("{}: {}: expected pretrain_gpt.py's arguments: dtwin's model spec "
                    "holds decoder-only models",
                    source, script));
  if (!script.empty() && script.find("pretrain_gpt") == std::string::npos)
    d.note("the arguments of " + script + " are read as pretrain_gpt.py's");
  d.name(name, "the source's name");
  const long long tp = a.integer("tensor-model-parallel-size").value_or(1);
  map_model(a, d, tp);
  map_training(a, d);
  map_layout(a, d, tp);
  a.report_unused(d);
  return d;
}

std::vector<std::string> split_shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\') {
      if (i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;  // a line continuation
        continue;
      }
      if (i + 1 < text.size()) word += text[++i];
      in_word = true;
    } else if (c == '\'') {
      const std::size_t end = text.find('\'', i + 1);
      if (end == std::string::npos) throw UserError("unterminated ' quote in the arguments");
      word += text.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() &&
            std::string_view("\"\\$`\n").find(text[j + 1]) != std::string_view::npos) {
          if (text[++j] != '\n') word += text[j];
        } else {
          word += text[j];
        }
      }
      if (j >= text.size()) throw UserError("unterminated \" quote in the arguments");
      i = j;
      in_word = true;
    } else if (c == '#' && !in_word) {
      const std::size_t end = text.find('\n', i);
      i = end == std::string::npos ? text.size() : end;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace dtwin::import
