#include "models/scenario_loader.hpp"

#include <fmt/format.h>
#include <climits>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "models/config_reader.hpp"

namespace dtwin {

using detail::blame;
using detail::expected;
using detail::Field;
using detail::Origin;
using detail::Override;
using detail::Section;

namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1) {
    parts.push_back(key.substr(start, dot - start));
  }
  parts.push_back(key.substr(start));
  return parts;
}

/// Applies one "key.path=value" to the map `root` (creating missing maps); returns it as an
/// Override.
Override apply_override(YAML::Node& root, const std::string& text) {
  const auto bad = [&](const std::string& what) {
    return ConfigError(fmt::format("--set {}: {}", text, what));
  };
  const auto eq = text.find('=');
  const std::string key =
      eq == std::string::npos ? "" : std::string(trim(std::string_view(text).substr(0, eq)));
  const std::vector<std::string> parts = split_key(key);
  for (const auto& part : parts) {
    if (part.empty()) throw bad("expected key.path=value, e.g. --set layout.microbatches=8");
  }
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw bad(
        fmt::format("{}: expected a YAML value ({}), got '{}'", key, e.msg, text.substr(eq + 1)));
  }
  YAML::Node node = root;
  std::string path;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    path += (i ? "." : "") + parts[i];
    YAML::Node child = node[parts[i]];
    if (!child.IsDefined() || child.IsNull()) child = YAML::Node(YAML::NodeType::Map);
    if (!child.IsMap()) {
      throw bad(fmt::format("{}: expected a map to hold '{}', got '{}'", path, parts[i + 1],
                            detail::render(child)));
    }
    node.reset(child);  // rebind (plain assignment would overwrite the parent's value)
  }
  node[parts.back()] = value;
  return Override{key, text};
}

/// Reads `model` and checks the head size (even for llama's rotary embeddings); returns the section
/// for later cross-checks.
Section read_model(const Origin& origin, const Section& root, ModelSpec& m) {
  Section s = root.section("model", {"family", "vocab_size", "d_model", "n_layers", "n_heads",
                                     "ffn_hidden", "seq_len", "attention"});
  m.family = s.choice("family", kModelFamilyNames);
  m.vocab_size = s.integer("vocab_size", 1);
  m.d_model = s.integer("d_model", 1);
  m.n_layers = s.integer("n_layers", 1);
  m.n_heads = s.integer("n_heads", 1);
  m.ffn_hidden = s.integer("ffn_hidden", 1);
  m.seq_len = s.integer("seq_len", 1);
  s.choice("attention", kAttentionNames, m.attention);

  const Field d_model = s.get("d_model"), n_heads = s.get("n_heads");
  if (m.d_model % m.n_heads != 0) {
    expected(origin, blame(origin, {&d_model, &n_heads}),
             fmt::format("model.d_model ({}) to be a multiple of model.n_heads ({})", m.d_model,
                         m.n_heads));
  }
  // Rotary embeddings rotate pairs of channels; GPT-2's learned positions have no such need.
  if (m.family == ModelFamily::Llama && (m.d_model / m.n_heads) % 2 != 0) {
    expected(origin, blame(origin, {&d_model, &n_heads}),
             fmt::format("model.d_model / model.n_heads ({} / {} = {}) to be even for rotary "
                         "embeddings",
                         m.d_model, m.n_heads, m.d_model / m.n_heads));
  }
  return s;
}

/// `what` of `field` to be divisible by layout.tp (Megatron-LM splits heads, the feed-forward
/// width, the vocabulary and, under sequence parallelism, the sequence over the tensor-parallel
/// group).
void require_tp_divides(const Origin& origin, const Field& tp, const Field& field, int value,
                        int degree) {
  if (value % degree == 0) return;
  expected(origin, blame(origin, {&tp, &field}),
           fmt::format("{} ({}) to be a multiple of layout.tp ({})", field.path, value, degree));
}

/// Reads layout's tensor-parallel, ZeRO, recomputation, overlap and offload keys and checks that
/// they fit each other and the model.
void read_sharding(const Origin& origin, const Section& s, const Section& model_s,
                   const ModelSpec& model, LayoutSpec& l) {
  s.boolean("sequence_parallel", l.sequence_parallel);
  s.boolean("tp_comm_overlap", l.tp_comm_overlap);
  s.integer("zero", 0, l.zero);
  if (l.zero > 3) expected(origin, s.get("zero"), "0, 1, 2 or 3");
  s.choice("recompute", kRecomputeNames, l.recompute);
  s.boolean("overlap_grad_reduce", l.overlap_grad_reduce);
  s.quantity("bucket_size", Quantity::Bytes, true, l.bucket_size);
  s.boolean("overlap_param_gather", l.overlap_param_gather);
  s.choice("offload", kOffloadNames, l.offload);

  if (l.tp > 1) {
    const Field tp = s.get("tp");
    require_tp_divides(origin, tp, model_s.get("n_heads"), model.n_heads, l.tp);
    require_tp_divides(origin, tp, model_s.get("ffn_hidden"), model.ffn_hidden, l.tp);
    require_tp_divides(origin, tp, model_s.get("vocab_size"), model.vocab_size, l.tp);
    // Sequence parallelism splits each sequence over the group.
    if (l.sequence_parallel)
      require_tp_divides(origin, tp, model_s.get("seq_len"), model.seq_len, l.tp);
  }
  if (l.sequence_parallel && l.tp == 1)
    expected(origin, s.get("sequence_parallel"), "false unless layout.tp > 1");
  if (l.tp_comm_overlap && !l.sequence_parallel)
    expected(origin, s.get("tp_comm_overlap"),
             "false unless layout.sequence_parallel is true (the overlapped collectives are its "
             "all-gathers and reduce-scatters)");
  if (l.zero > 0 && l.dp == 1) {
    const Field zero = s.get("zero"), dp = s.get("dp");
    expected(origin, blame(origin, {&zero, &dp}),
             "layout.zero = 0 with layout.dp = 1 (ZeRO shards over the data-parallel group)");
  }
  if (l.zero > 0 && l.dp_sync != sched::DpSync::AllReduce)
    expected(origin, s.get("dp_sync"), "all-reduce when layout.zero > 0");
  if (l.overlap_grad_reduce && l.dp_sync != sched::DpSync::AllReduce)
    expected(origin, s.get("dp_sync"),
             "all-reduce when layout.overlap_grad_reduce is true (gradient buckets are reduced)");
  if (l.overlap_param_gather && l.zero == 0)
    expected(origin, s.get("overlap_param_gather"),
             "false unless layout.zero > 0 (only sharded parameters are gathered)");
}

/// Reads `layout` and checks it against the schedule and the model's layer count.
Section read_layout(const Origin& origin, const Section& root, const Section& model_s,
                    const ModelSpec& model, LayoutSpec& l) {
  Section s =
      root.section("layout", {"dp", "pp", "tp", "microbatches", "micro_batch_size", "schedule",
                              "virtual_stages", "dp_sync", "stage_layers", "sequence_parallel",
                              "tp_comm_overlap", "zero", "recompute", "overlap_grad_reduce",
                              "bucket_size", "overlap_param_gather", "offload"});
  l.dp = s.integer("dp", 1);
  l.pp = s.integer("pp", 1);
  s.integer("tp", 1, l.tp);
  l.microbatches = s.integer("microbatches", 1);
  l.micro_batch_size = s.integer("micro_batch_size", 1);
  l.schedule = s.choice("schedule", sched::kScheduleKindNames);
  s.integer("virtual_stages", 1, l.virtual_stages);
  s.choice("dp_sync", sched::kDpSyncNames, l.dp_sync);
  const std::optional<Field> stage_layers = s.find("stage_layers");
  if (stage_layers) l.stage_layers = detail::to_int_list(origin, *stage_layers, 1);

  const bool interleaved = l.schedule == sched::ScheduleKind::Interleaved1F1B;
  const std::optional<Field> vs = s.find("virtual_stages");
  if (l.virtual_stages != 1 && !interleaved) {
    expected(origin, *vs, "1 unless layout.schedule is interleaved-1f1b");
  }
  const Field pp = s.get("pp"), microbatches = s.get("microbatches");
  if (interleaved && l.microbatches % l.pp != 0) {
    expected(origin, blame(origin, {&microbatches, &pp}),
             fmt::format("layout.microbatches ({}) to be a multiple of layout.pp ({}) for "
                         "interleaved-1f1b",
                         l.microbatches, l.pp));
  }
  const int stages = l.pp * l.virtual_stages;
  const Field n_layers = model_s.get("n_layers");
  if (!stage_layers && model.n_layers % stages != 0) {
    expected(origin, blame(origin, {&pp, vs ? &*vs : nullptr, &n_layers}),
             fmt::format("layout.pp * layout.virtual_stages ({}) to divide model.n_layers ({}) "
                         "(or a layout.stage_layers list)",
                         stages, model.n_layers));
  }
  if (stage_layers && static_cast<int>(l.stage_layers.size()) != stages) {
    expected(origin, *stage_layers,
             fmt::format("layout.pp * layout.virtual_stages = {} entries", stages));
  }
  const int sum = std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), 0);
  if (stage_layers && sum != model.n_layers) {
    expected(origin, blame(origin, {&*stage_layers, &n_layers}),
             fmt::format("entries summing to model.n_layers ({})", model.n_layers));
  }
  read_sharding(origin, s, model_s, model, l);
  return s;
}

void read_training(const Section& root, TrainingSpec& t) {
  const auto s = root.optional_section("training", {"steps", "lr", "optimizer", "seed", "precision",
                                                    "grad_precision", "checkpoint_every"});
  if (!s) return;
  s->integer("steps", 1, t.steps);
  s->quantity("lr", Quantity::Count, true, t.lr);
  s->choice("optimizer", {"adamw"}, t.optimizer);
  if (const auto seed = s->find("seed")) {
    t.seed = static_cast<std::uint64_t>(
        detail::to_integer(root.origin(), *seed, 0, LLONG_MAX, "a non-negative integer"));
  }
  s->choice("precision", kPrecisionNames, t.precision);
  s->choice("grad_precision", kPrecisionNames, t.grad_precision);
  if (t.precision == Precision::Fp32 && t.grad_precision != Precision::Fp32)
    expected(root.origin(), s->get("grad_precision"),
             "fp32 when training.precision is fp32 (gradients are never narrower than the "
             "weights)");
  s->integer("checkpoint_every", 0, t.checkpoint_every);
}

LinkSpec read_link(const Section& cluster, const std::string& key) {
  const Section s = cluster.section(key, {"bandwidth", "latency"});
  return LinkSpec{s.quantity("bandwidth", Quantity::Bandwidth, true),
                  s.quantity("latency", Quantity::Latency, false)};
}

/// Reads `cluster` and checks that it has one device slot per rank of the layout.
void read_cluster(const Origin& origin, const Section& root, const Section& layout_s,
                  const Scenario& sc, ClusterSpec& c) {
  const Section s =
      root.section("cluster", {"nodes", "devices_per_node", "ranks_per_device", "device",
                               "intra_node", "inter_node", "topology", "nodes_per_switch"});
  c.nodes = s.integer("nodes", 1);
  c.devices_per_node = s.integer("devices_per_node", 1);
  s.integer("ranks_per_device", 1, c.ranks_per_device);

  const Section d = s.section("device", {"kind", "model", "peak_flops", "efficiency", "memory",
                                         "cores", "profile", "host_link"});
  DeviceSpec& dev = c.device;
  d.choice("kind", kDeviceKindNames, dev.kind);

  d.quantity("efficiency", Quantity::Count, true, dev.efficiency);
  if (dev.efficiency > 1) expected(origin, d.get("efficiency"), "a fraction in (0, 1]");

  d.integer("cores", 1, dev.cores);
  d.text("profile", true, dev.profile);
  if (const std::optional<Field> model = d.find("model")) {
    dev.model = d.text("model", false);
    try {
      dev.description = load_device_description(dev.model, sc.source);
    } catch (const ConfigError& error) {
      origin.fail(model->path, model->mark, error.what());
    }
  }
  // A device description supplies the peak and the memory unless the scenario gives them.
  if (dev.description) {
    dev.peak_flops = dev.description->peak_flops(sc.training.precision);
    dev.memory = dev.description->memory;
    d.quantity("peak_flops", Quantity::FlopRate, true, dev.peak_flops);
    d.quantity("memory", Quantity::Bytes, true, dev.memory);
  } else {
    dev.peak_flops = d.quantity("peak_flops", Quantity::FlopRate, true);
    dev.memory = d.quantity("memory", Quantity::Bytes, true);
  }
  if (d.find("host_link")) dev.host_link = read_link(d, "host_link");
  if (sc.layout.offload != Offload::None && dev.host_link.bandwidth <= 0) {
    const Field offload = layout_s.get("offload");
    expected(origin, offload,
             "none unless cluster.device.host_link is given (offloaded state "
             "moves over it)");
  }

  c.intra_node = read_link(s, "intra_node");
  c.inter_node = read_link(s, "inter_node");
  s.choice("topology", kTopologyNames, c.topology);
  s.integer("nodes_per_switch", 1, c.nodes_per_switch);
  if (c.topology == Topology::FatTree && c.nodes % c.nodes_per_switch != 0) {
    const std::optional<Field> per = s.find("nodes_per_switch");
    expected(
        origin, per ? *per : s.get("nodes"),
        fmt::format("cluster.nodes ({}) to be a multiple of nodes_per_switch ({}) for a fat-tree",
                    c.nodes, c.nodes_per_switch));
  }

  const long long slots = 1LL * c.nodes * c.devices_per_node * c.ranks_per_device;
  if (sc.world_size() != slots) {
    const Field dp = layout_s.get("dp"), pp = layout_s.get("pp"), nodes = s.get("nodes"),
                devices = s.get("devices_per_node");
    const std::optional<Field> tp = layout_s.find("tp"), ranks = s.find("ranks_per_device");
    expected(
        origin,
        blame(origin, {&dp, &pp, tp ? &*tp : nullptr, &nodes, &devices, ranks ? &*ranks : nullptr}),
        fmt::format("dp*pp*tp = {} ranks to match nodes*devices_per_node*ranks_per_device = {}",
                    sc.world_size(), slots));
  }
}

void read_runtime(const Section& root, RuntimeSpec& r) {
  const auto s = root.optional_section("runtime", {"backend", "device", "timeout_s", "threads"});
  if (!s) return;
  s->choice("backend", kBackendNames, r.backend);
  s->choice("device", kRuntimeDeviceNames, r.device);
  s->quantity("timeout_s", Quantity::Count, true, r.timeout_s);
  s->integer("threads", 0, r.threads);
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node doc = detail::load_yaml_file(path, "scenario");
  std::vector<Override> applied;
  if (!overrides.empty() && doc.IsNull()) doc = YAML::Node(YAML::NodeType::Map);  // empty file
  if (doc.IsMap()) {  // otherwise the root check below reports the file
    for (const auto& text : overrides) applied.push_back(apply_override(doc, text));
  }
  const Origin origin(path, std::move(applied));

  Scenario sc;
  sc.source = path;
  const Section root(origin, Field{doc, "", doc.Mark()},
                     {"name", "model", "layout", "training", "cluster", "runtime"});
  sc.name = root.text("name", false);
  const Section model_s = read_model(origin, root, sc.model);
  const Section layout_s = read_layout(origin, root, model_s, sc.model, sc.layout);
  read_training(root, sc.training);
  read_cluster(origin, root, layout_s, sc, sc.cluster);
  read_runtime(root, sc.runtime);
  return sc;
}

}  // namespace dtwin
