// `dtwin import torchtitan`: a torchtitan job TOML as a scenario.
#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <sstream>
#include <tuple>

#include "base/user_error.hpp"
#include "cli/import/importers.hpp"

namespace dtwin::import {
namespace {

/// A torchtitan llama3 flavor (torchtitan/models/llama3/__init__.py): the FFN width is
/// compute_ffn_hidden_dim(dim, multiple_of, ffn_dim_multiplier); the vocabulary is Llama 3's
/// tokenizer's (128256) and 2048 for the debug model.
struct Flavor {
  const char* name;
  long long dim, layers, heads, kv_heads, ffn, vocab;
  const char* attention;  ///< "" for SDPA, else the attention backend it names
};

constexpr Flavor kLlama3Flavors[] = {
    {"debugmodel", 256, 6, 16, 16, 768, 2048, ""},
    {"debugmodel_flex_attn", 256, 6, 16, 16, 768, 2048, "flex"},
    {"8B", 4096, 32, 32, 8, 14336, 128256, ""},
    {"8B_flex", 4096, 32, 32, 8, 14336, 128256, "flex"},
    {"8B_varlen", 4096, 32, 32, 8, 14336, 128256, "varlen"},
    {"70B", 8192, 80, 64, 8, 28672, 128256, ""},
    {"405B", 16384, 126, 128, 8, 53248, 128256, ""},
};

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

/// The parsed TOML file with its leaf keys (dotted, in file order) and which have been mapped.
class Toml {
 public:
  explicit Toml(std::string path) : path_(std::move(path)) {
    if (!std::filesystem::is_regular_file(path_))
      throw UserError(path_ + ": cannot open the torchtitan TOML file");
    try {
      table_ = toml::parse_file(path_);
    } catch (const toml::parse_error& e) {
      throw UserError(fmt::format("{}:{}:{}: invalid TOML: {}", path_, e.source().begin.line,
                                  e.source().begin.column, e.description()));
    }
    std::vector<std::tuple<toml::source_position, std::string>> leaves;
    collect(table_, "", leaves);
    std::sort(leaves.begin(), leaves.end(), [](const auto& a, const auto& b) {
      const auto& [pa, ka] = a;
      const auto& [pb, kb] = b;
      return std::tie(pa.line, pa.column, ka) < std::tie(pb.line, pb.column, kb);
    });
    for (const auto& [position, key] : leaves) fields_.add(key);
  }

  const std::string& path() const { return path_; }
  SourceFields& fields() { return fields_; }
  bool has(const std::string& key) const { return fields_.contains(key); }
  /// Marks `key` as mapped.
  void use(const std::string& key) { fields_.use(key); }
  /// The first of `keys` the file holds (older torchtitan versions kept some keys elsewhere), or
  /// the first one.
  std::string first(std::initializer_list<const char*> keys) const {
    for (const char* key : keys)
      if (has(key)) return key;
    return *keys.begin();
  }

  /// [[noreturn]] "PATH:LINE:COL: KEY: expected WHAT, got 'VALUE'".
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    const toml::node* node = toml::at_path(table_, key).node();
    std::ostringstream value;
    if (node && node->is_string())
      value << node->value_exact<std::string>().value_or("");
    else if (node)
      value << toml::at_path(table_, key);
    const auto where = node ? node->source().begin : toml::source_position{};
    throw UserError(fmt::format("{}:{}:{}: {}: expected {}, got '{}'", path_, where.line,
                                where.column, key, what, value.str()));
  }

  /// The integer at `key` (at least `min`), marked mapped; nullopt when absent.
  std::optional<long long> integer(const std::string& key, long long min = 1) {
    if (!has(key)) return std::nullopt;
    use(key);
    const auto value = toml::at_path(table_, key).value_exact<int64_t>();
    if (!value || *value < min) fail(key, fmt::format("an integer >= {}", min));
    return *value;
  }
  /// The number (integer or float) at `key`, > 0, marked mapped; nullopt when absent.
  std::optional<double> number(const std::string& key) {
    if (!has(key)) return std::nullopt;
    use(key);
    const auto value = toml::at_path(table_, key).value<double>();
    if (!value || !(*value > 0)) fail(key, "a number > 0");
    return *value;
  }
  /// The string at `key`, marked mapped; nullopt when absent.
  std::optional<std::string> string(const std::string& key) {
    if (!has(key)) return std::nullopt;
    use(key);
    const auto value = toml::at_path(table_, key).value_exact<std::string>();
    if (!value) fail(key, "a string");
    return *value;
  }
  /// The Boolean at `key`, marked mapped; nullopt when absent.
  std::optional<bool> boolean(const std::string& key) {
    if (!has(key)) return std::nullopt;
    use(key);
    const auto value = toml::at_path(table_, key).value_exact<bool>();
    if (!value) fail(key, "true or false");
    return *value;
  }
  /// The strings at `key` (a string or an array of strings), marked mapped.
  std::vector<std::string> strings(const std::string& key) {
    if (!has(key)) return {};
    use(key);
    const auto view = toml::at_path(table_, key);
    if (const auto one = view.value_exact<std::string>()) return {*one};
    std::vector<std::string> out;
    if (const toml::array* array = view.as_array()) {
      for (const toml::node& item : *array) {
        const auto text = item.value_exact<std::string>();
        if (!text) fail(key, "a string or an array of strings");
        out.push_back(*text);
      }
      return out;
    }
    fail(key, "a string or an array of strings");
  }
  /// Reports `key`, if the file holds it, as unsupported with `why`.
  void reject(const std::string& key, const std::string& why) { fields_.reject(key, why); }

 private:
  static void collect(const toml::table& table, const std::string& prefix,
                      std::vector<std::tuple<toml::source_position, std::string>>& out) {
    for (const auto& [key, node] : table) {
      const std::string path = prefix + std::string(key.str());
      if (const toml::table* inner = node.as_table())
        collect(*inner, path + ".", out);
      else
        out.emplace_back(node.source().begin, path);
    }
  }

  std::string path_;
  toml::table table_;
  SourceFields fields_;
};

const Flavor& map_model(Toml& t, ScenarioDraft& d) {
  const std::string name = t.string("model.name").value_or("");
  if (name != "llama3") t.fail("model.name", "llama3 (the model dtwin knows the flavors of)");
  const std::string flavor = t.string("model.flavor").value_or("");
  const Flavor* found = nullptr;
  for (const Flavor& f : kLlama3Flavors)
    if (flavor == f.name) found = &f;
  if (!found) t.fail("model.flavor", "debugmodel, 8B, 70B or 405B (torchtitan's llama3 flavors)");
  const Flavor& f = *found;
  const std::string origin = "llama3 " + flavor;
  d.set("model.family", "llama", "model.name llama3");
  d.set("model.vocab_size", f.vocab, origin + (f.vocab == 2048 ? "" : ": Llama 3's tokenizer"));
  d.set("model.d_model", f.dim, origin);
  d.set("model.n_layers", f.layers, origin);
  d.set("model.n_heads", f.heads, origin);
  if (f.kv_heads != f.heads) d.set("model.n_kv_heads", f.kv_heads, origin);
  d.set("model.ffn_hidden", f.ffn, origin + ": compute_ffn_hidden_dim");
  const long long seq = t.integer("training.seq_len").value_or(2048);
  d.set("model.seq_len", seq,
        t.has("training.seq_len") ? "training.seq_len" : "torchtitan's default training.seq_len");
  d.set("model.attention", "flash", "torchtitan's SDPA (flash)");
  if (*f.attention)
    d.note(
        fmt::format("flavor {}: {} attention with a block-causal mask is simulated as causal "
                    "flash attention over the whole sequence",
                    flavor, f.attention));
  if (const auto norm = t.string("model.norm_type");
      norm && lower(*norm).find("rmsnorm") == std::string::npos)
    t.reject("model.norm_type", *norm + ": simulated as llama's RMSNorm");
  for (const char* key : {"model.tokenizer_path", "model.hf_assets_path"})
    t.reject(key, "the vocabulary is the flavor's");
  return f;
}

/// Precision, optimizer, float8 and the training loop.
void map_training(Toml& t, ScenarioDraft& d) {
  const std::vector<std::string> converters = t.strings("model.converters");
  const bool float8 =
      std::find(converters.begin(), converters.end(), "float8") != converters.end() ||
      t.boolean("float8.enable_float8_linear").value_or(false);
  for (const std::string& converter : converters)
    if (converter != "float8") t.reject("model.converters", converter + " is not modelled");
  const std::string param = t.string("training.mixed_precision_param").value_or("bfloat16");
  if (param != "bfloat16" && param != "float32")
    t.fail("training.mixed_precision_param", "bfloat16 or float32");
  const std::string origin = t.has("training.mixed_precision_param")
                                 ? "training.mixed_precision_param"
                                 : "torchtitan's default mixed_precision_param (bfloat16)";
  if (float8) {
    d.set("training.precision", "fp8", "model.converters float8");
    const std::string recipe = t.string("float8.recipe_name").value_or("tensorwise");
    d.set("training.fp8_recipe", "tensorwise",
          t.has("float8.recipe_name") ? "float8.recipe_name" : "torchao's default (tensorwise)");
    if (recipe != "tensorwise")
      t.reject("float8.recipe_name", recipe + ": simulated as tensorwise scaling");
    if (t.boolean("float8.enable_fsdp_float8_all_gather").value_or(false))
      d.set("training.fp8_param_gather", true, "float8.enable_fsdp_float8_all_gather");
  } else {
    d.set("training.precision", param == "float32" ? "fp32" : "bf16", origin);
    t.reject("float8.recipe_name", "no float8 converter");
    t.reject("float8.enable_fsdp_float8_all_gather", "no float8 converter");
  }
  const std::string reduce = t.string("training.mixed_precision_reduce").value_or("float32");
  if (reduce == "bfloat16" && param != "float32")
    d.set("training.grad_precision", "bf16", "training.mixed_precision_reduce");
  else if (reduce != "float32")
    t.fail("training.mixed_precision_reduce", "float32 or bfloat16 (with bfloat16 parameters)");
  if (const auto steps = t.integer("training.steps"))
    d.set("training.steps", *steps, "training.steps");
  if (const auto seed = t.integer("training.seed", 0))
    d.set("training.seed", *seed, "training.seed");
  const std::string optimizer = t.string("optimizer.name").value_or("AdamW");
  if (lower(optimizer) == "adamw" || lower(optimizer) == "adam")
    d.set("training.optimizer", "adamw", t.has("optimizer.name") ? "optimizer.name" : "default");
  else
    t.reject("optimizer.name", optimizer + ": simulated as AdamW (its states and step)");
  if (const auto lr = t.number("optimizer.lr")) d.set("training.lr", *lr, "optimizer.lr");
  const std::string enable = t.first({"checkpoint.enable", "checkpoint.enable_checkpoint"});
  if (t.boolean(enable).value_or(false)) {
    if (const auto every = t.integer("checkpoint.interval"))
      d.set("training.checkpoint_every", *every, "checkpoint.interval");
  }
  if (const auto timeout = t.integer("comm.init_timeout_seconds"))
    d.set("runtime.timeout_s", *timeout, "comm.init_timeout_seconds");
}

struct Schedule {
  const char* torchtitan;
  const char* dtwin;
  bool multi_stage;
  const char* why;  ///< "" when dtwin runs the same schedule
};

constexpr Schedule kSchedules[] = {
    {"gpipe", "gpipe", false, ""},
    {"1f1b", "1f1b", false, ""},
    {"interleaved1f1b", "interleaved-1f1b", true, ""},
    {"loopedbfs", "interleaved-1f1b", true, "simulated as interleaved 1F1B over the same stages"},
    {"interleavedzerobubble", "interleaved-1f1b", true,
     "simulated as interleaved 1F1B (dtwin's zero-bubble schedules are ZB-H1, ZB-1p/2p, ZB-V)"},
    {"zbvzerobubble", "zb-v", true, ""},
    {"dualpipev", "dualpipe-v", true, ""},
};

/// The layout: torchtitan's degrees on the cluster (-1 for data_parallel_shard_degree takes the
/// GPUs the others leave), FSDP where the shard degree (or cp) is above 1, batches and the
/// pipeline schedule.
void map_layout(Toml& t, ScenarioDraft& d, const Flavor& flavor) {
  // torchtitan's defaults: 1, and -1 (the GPUs the others leave) for the shard degree.
  const auto degree = [&](std::initializer_list<const char*> keys, long long fallback) {
    const std::string key = t.first(keys);
    const long long value = t.integer(key, fallback).value_or(fallback);
    if (value == 0) t.fail(key, "-1 or an integer >= 1");
    return value;
  };
  const long long replicate = degree(
      {"parallelism.data_parallel_replicate_degree", "training.data_parallel_replicate_degree"}, 1);
  long long shard =
      degree({"parallelism.data_parallel_shard_degree", "training.data_parallel_shard_degree"}, -1);
  const long long tp =
      degree({"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"}, 1);
  const long long pp =
      degree({"parallelism.pipeline_parallel_degree", "experimental.pipeline_parallel_degree"}, 1);
  const long long cp =
      degree({"parallelism.context_parallel_degree", "experimental.context_parallel_degree"}, 1);
  const long long others = replicate * tp * pp * cp;
  const long long per_node = d.integer("cluster.devices_per_node", 8);
  if (shard > 0 && !d.locked("cluster.nodes") && (others * shard) % per_node == 0)
    set_default_cluster(d, others * shard / per_node);
  else
    set_default_cluster(d, 1);
  const long long world = cluster_world(d);
  if (shard == -1) {
    if (world % others != 0)
      throw UserError(fmt::format(
          "{}: parallelism degrees replicate · tp · pp · cp = {}: expected a divisor of the "
          "cluster's {} GPUs (data_parallel_shard_degree -1 takes the rest; --set cluster.nodes)",
          t.path(), others, world));
    shard = world / others;
  } else if (others * shard != world) {
    throw UserError(
        fmt::format("{}: parallelism degrees multiply to {}: expected the cluster's {} GPUs (--set "
                    "cluster.nodes=N, cluster.devices_per_node=M)",
                    t.path(), others * shard, world));
  }
  const long long dp = replicate * shard;
  d.set("layout.dp", dp, "data_parallel_replicate_degree · data_parallel_shard_degree");
  if (tp > 1) {
    d.set("layout.tp", tp, "tensor_parallel_degree");
    d.set("layout.sequence_parallel", true, "torchtitan's TP shards the norms' sequence");
  }
  d.set("layout.pp", pp, "pipeline_parallel_degree");
  if (cp > 1) {
    d.set("layout.cp", cp, "context_parallel_degree");
    const std::string rotate =
        t.string("parallelism.context_parallel_rotate_method").value_or("allgather");
    if (rotate != "allgather" && rotate != "alltoall")
      t.fail("parallelism.context_parallel_rotate_method", "allgather or alltoall");
    d.set("layout.cp_comm_type", rotate == "allgather" ? "all_gather" : "p2p",
          t.has("parallelism.context_parallel_rotate_method")
              ? "context_parallel_rotate_method"
              : "torchtitan's default rotate method (allgather)");
  }
  const std::string async_tp = t.first(
      {"parallelism.enable_async_tensor_parallel", "experimental.enable_async_tensor_parallel"});
  if (t.boolean(async_tp).value_or(false) && tp > 1)
    d.set("layout.tp_comm_overlap", true, "enable_async_tensor_parallel");

  // FSDP (ZeRO-3) over the shard degree times cp; HSDP when replicated too.
  const bool fsdp = shard * cp > 1;
  if (fsdp) {
    d.set("layout.zero", 3LL, "data_parallel_shard_degree (FSDP)");
    if (replicate > 1) d.set("layout.dp_shard", shard, "data_parallel_shard_degree (HSDP)");
    const std::string reshard =
        t.string("parallelism.fsdp_reshard_after_forward").value_or("default");
    if (reshard != "default" && reshard != "always" && reshard != "never")
      t.fail("parallelism.fsdp_reshard_after_forward", "default, always or never");
    const bool layer = reshard == "always" || (reshard == "default" && pp == 1);
    d.set("layout.zero3_gather", layer ? "layer" : "stage",
          t.has("parallelism.fsdp_reshard_after_forward")
              ? "fsdp_reshard_after_forward"
              : "torchtitan's default: reshard after forward unless pipelined");
    d.set("layout.overlap_param_gather", true, "FSDP's prefetch");
  }
  if (dp * cp > 1) d.set("layout.overlap_grad_reduce", true, "FSDP / DDP overlap the backward");
  if (t.boolean("training.enable_cpu_offload").value_or(false)) {
    d.set("layout.offload", "optimizer+params", "training.enable_cpu_offload");
    d.set("cluster.device.host_link.bandwidth", "64GB/s", "default: PCIe 5.0 x16");
    d.set("cluster.device.host_link.latency", "10us", "default");
  }

  // Batches: local_batch_size per data-parallel rank, cut into pipeline microbatches, then
  // accumulated up to global_batch_size.
  const std::string local_key = t.first({"training.local_batch_size", "training.batch_size"});
  const long long local = t.integer(local_key).value_or(8);
  long long micro = local, per_step = 1;
  std::string micro_origin = t.has(local_key) ? local_key : "torchtitan's default local_batch_size";
  if (pp > 1) {
    if (const auto count = t.integer("experimental.pipeline_parallel_microbatches")) {
      if (local % *count != 0)
        t.fail("experimental.pipeline_parallel_microbatches",
               fmt::format("a divisor of the local batch {}", local));
      micro = local / *count, micro_origin = local_key + " / pipeline_parallel_microbatches";
    } else {
      micro = t.integer("parallelism.pipeline_parallel_microbatch_size").value_or(1);
      micro_origin = t.has("parallelism.pipeline_parallel_microbatch_size")
                         ? "pipeline_parallel_microbatch_size"
                         : "torchtitan's default pipeline_parallel_microbatch_size";
      if (local % micro != 0)
        t.fail("parallelism.pipeline_parallel_microbatch_size",
               fmt::format("a divisor of the local batch {}", local));
    }
    per_step = local / micro;
  }
  long long accumulation = 1;
  if (const auto global = t.integer("training.global_batch_size", -1); global && *global > 0) {
    if (*global % (local * dp) != 0)
      t.fail("training.global_batch_size",
             fmt::format("a multiple of local_batch_size · data-parallel degree = {} · {}", local,
                         dp));
    accumulation = *global / (local * dp);
  }
  d.set("layout.micro_batch_size", micro, micro_origin);
  d.set("layout.microbatches", per_step * accumulation,
        pp > 1 ? "pipeline microbatches · gradient accumulation steps"
               : "gradient accumulation steps (global_batch_size / (local_batch_size · dp))");

  // The pipeline schedule.
  const std::string schedule_key = t.first(
      {"parallelism.pipeline_parallel_schedule", "experimental.pipeline_parallel_schedule"});
  const std::string name = t.string(schedule_key).value_or("1F1B");
  const Schedule* schedule = nullptr;
  for (const Schedule& s : kSchedules)
    if (lower(name) == s.torchtitan) schedule = &s;
  if (!schedule)
    t.fail(schedule_key,
           "GPipe, 1F1B, Interleaved1F1B, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble or "
           "DualPipeV");
  d.set("layout.schedule", schedule->dtwin,
        t.has(schedule_key) ? "pipeline_parallel_schedule" : "torchtitan's default (1F1B)");
  if (*schedule->why) t.reject(schedule_key, name + ": " + schedule->why);
  // Stages per rank: 1, or 2 for a looped schedule, unless pipeline_parallel_layers_per_stage
  // sets the stage count (the embedding and the output each weigh one layer), as torchtitan.
  long long per_rank = schedule->multi_stage ? 2 : 1;
  std::string origin = "torchtitan's default: 2 stages per rank for a looped schedule";
  if (const auto per_stage = t.integer("parallelism.pipeline_parallel_layers_per_stage")) {
    const long long stages = (flavor.layers + 2 + *per_stage - 1) / *per_stage;
    if (stages % pp != 0 || (stages / pp > 1) != schedule->multi_stage)
      t.fail("parallelism.pipeline_parallel_layers_per_stage",
             fmt::format("(n_layers + 2) / it = {} stages, a multiple of pp = {} with {} per rank "
                         "for {}",
                         stages, pp, schedule->multi_stage ? "at least 2" : "one", name));
    per_rank = stages / pp;
    origin = "(n_layers + 2) / pipeline_parallel_layers_per_stage / pp";
  }
  if (per_rank > 1) d.set("layout.virtual_stages", per_rank, origin);
  if (pp > 1) {
    // torchtitan's generate_llm_fqn_per_model_part: n_layers + 2 layers' worth split evenly (the
    // first stages take the remainder), the embedding counted in the first stage, the output in
    // the last.
    const long long stages = pp * per_rank, effective = flavor.layers + 2;
    if (effective / stages < 1)
      t.fail(t.first(
                 {"parallelism.pipeline_parallel_degree", "experimental.pipeline_parallel_degree"}),
             fmt::format("at most n_layers + 2 = {} stages", effective));
    YAML::Node split(YAML::NodeType::Sequence);
    bool even = true;
    for (long long s = 0; s < stages; ++s) {
      long long layers = effective / stages + (s < effective % stages ? 1 : 0);
      if (s == 0) --layers;
      if (s == stages - 1) --layers;
      split.push_back(layers);
      even = even && layers == flavor.layers / stages && flavor.layers % stages == 0;
    }
    if (!even)
      d.set("layout.stage_layers", split,
            "torchtitan's split: the embedding and the output each weigh a layer");
  }
  for (const char* key : {"parallelism.pipeline_parallel_split_points",
                          "experimental.pipeline_parallel_split_points"})
    t.reject(key, "simulated with torchtitan's default split");
  for (const char* key :
       {"parallelism.expert_parallel_degree", "parallelism.expert_tensor_parallel_degree"})
    if (t.integer(key).value_or(1) > 1) t.reject(key, "llama3 has no experts");

  // Activation checkpointing.
  const std::string mode = t.string("activation_checkpoint.mode").value_or("selective");
  if (mode != "none" && mode != "selective" && mode != "full")
    t.fail("activation_checkpoint.mode", "none, selective or full");
  const std::string option = t.string("activation_checkpoint.selective_ac_option").value_or("op");
  const bool every_layer = mode == "selective" && option == "1";
  d.set("layout.recompute", every_layer ? "full" : mode,
        t.has("activation_checkpoint.mode") ? "activation_checkpoint.mode"
                                            : "torchtitan's default activation_checkpoint.mode");
  t.use("activation_checkpoint.selective_ac_option");
  if (mode == "selective" && !every_layer)
    t.reject("activation_checkpoint.selective_ac_option",
             option == "op"
                 ? "op-level selective checkpointing (every other matmul output saved) is "
                   "simulated as dtwin's selective recomputation (Korthikanti et al.: the "
                   "attention core)"
                 : "every " + option +
                       "th layer recomputed in full: simulated as dtwin's "
                       "selective recomputation");
}

}  // namespace

ScenarioDraft import_torchtitan(const std::string& path,
                                const std::vector<std::string>& overrides) {
  Toml t(path);
  ScenarioDraft d("torchtitan", path);
  d.apply_overrides(overrides);
  d.name(std::filesystem::path(path).stem().string(), "the file's name");
  const Flavor& flavor = map_model(t, d);
  map_training(t, d);
  map_layout(t, d, flavor);
  t.fields().report_unused(d);
  return d;
}

}  // namespace dtwin::import
