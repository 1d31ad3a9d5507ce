#include "models/spec/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "models/spec/schema.hpp"
#include "models/spec/stage_partition.hpp"
#include "schedules/generators.hpp"

namespace dtwin {
namespace {

/// True when every section around `field` is required: its required keys must then hold a
/// valid value even at their default.
bool always_present(const FieldSpec& field) {
  for (std::string parent = field.parent(); !parent.empty();) {
    const FieldSpec* section = find_field(parent);
    if (section == nullptr || !section->required) return false;
    parent = section->parent();
  }
  return true;
}

void check_ranges(const Scenario& sc, std::vector<Violation>& out) {
  static const Scenario defaults;
  for (const FieldSpec& f : scenario_fields()) {
    if (f.kind == FieldKind::Section) continue;
    const FieldValue value = f.get(sc);
    const bool must = (f.required || !f.required_unless.empty()) && always_present(f);
    if (!must && value == f.get(defaults)) continue;
    const std::string error = range_error(f, value);
    if (!error.empty()) out.push_back({{f.path}, error});
  }
}

void check_model(const ModelSpec& m, std::vector<Violation>& out) {
  if (m.n_heads <= 0) return;  // a range violation already
  if (m.d_model % m.n_heads != 0) {
    out.push_back({{"model.d_model", "model.n_heads"},
                   fmt::format("model.d_model ({}) to be a multiple of model.n_heads ({})",
                               m.d_model, m.n_heads)});
  } else if (m.family == ModelFamily::Llama && (m.d_model / m.n_heads) % 2 != 0) {
    // Rotary embeddings rotate pairs of channels; GPT-2's learned positions have no such need.
    out.push_back({{"model.d_model", "model.n_heads"},
                   fmt::format("model.d_model / model.n_heads ({} / {} = {}) to be even for "
                               "rotary embeddings",
                               m.d_model, m.n_heads, m.d_model / m.n_heads)});
  }
  if (m.n_kv_heads > 0 && m.n_heads % m.n_kv_heads != 0)
    out.push_back({{"model.n_kv_heads", "model.n_heads"},
                   fmt::format("model.n_kv_heads ({}) to divide model.n_heads ({}) (each key/value "
                               "head serves a group of query heads)",
                               m.n_kv_heads, m.n_heads)});
}

/// The encoders (bert, distilbert): positions for seq_len, one sequence per context (the
/// classification head reads its first token, and context parallelism's load-balanced chunks
/// assume a causal mask); the head's keys are theirs only.
void check_encoder(const ModelSpec& m, const LayoutSpec& l, std::vector<Violation>& out) {
  if (!is_encoder(m.family)) {
    if (m.max_position_embeddings != 0)
      out.push_back({{"model.max_position_embeddings"},
                     "absent unless model.family is bert or distilbert (decoders have seq_len "
                     "positions)"});
    if (m.num_labels != 2)
      out.push_back({{"model.num_labels"},
                     "absent unless model.family is bert or distilbert (a decoder's head is the "
                     "LM head)"});
    if (!m.checkpoint.empty())
      out.push_back({{"model.checkpoint"},
                     "absent unless model.family is bert or distilbert (decoders start from "
                     "training.seed)"});
    return;
  }
  if (m.max_position_embeddings != 0 && m.max_position_embeddings < m.seq_len)
    out.push_back(
        {{"model.max_position_embeddings", "model.seq_len"},
         fmt::format("at least model.seq_len ({}): a position embedding per token", m.seq_len)});
  if (l.cp != 1)
    out.push_back({{"layout.cp", "model.family"},
                   "1 with an encoder (context parallelism's chunks assume a causal mask)"});
}

// layout.global_batch, when given, is microbatches · micro_batch_size · dp (Megatron-LM's
// number of microbatches: global batch / (micro batch · data-parallel size)).
void check_global_batch(const LayoutSpec& l, std::vector<Violation>& out) {
  const long long per_microbatch = static_cast<long long>(l.micro_batch_size) * l.dp;
  if (l.global_batch <= 0 || per_microbatch <= 0 ||
      l.global_batch == l.microbatches * per_microbatch)
    return;
  out.push_back(
      {{"layout.global_batch", "layout.microbatches"},
       l.global_batch % per_microbatch != 0
           ? fmt::format("layout.global_batch ({}) to be a multiple of micro_batch_size · dp "
                         "({} · {} = {})",
                         l.global_batch, l.micro_batch_size, l.dp, per_microbatch)
           : fmt::format("layout.global_batch ({}) to equal microbatches · micro_batch_size · dp "
                         "({} · {} · {} = {}); give one of global_batch and microbatches",
                         l.global_batch, l.microbatches, l.micro_batch_size, l.dp,
                         l.microbatches * per_microbatch)});
}

void check_pipeline(const ModelSpec& m, const LayoutSpec& l, std::vector<Violation>& out) {
  const std::string_view schedule = sched::kScheduleKindNames.name(l.schedule);
  const sched::Requirements needs = sched::requirements(l.schedule);
  if (needs.virtual_stages == 1 && l.virtual_stages != 1)
    out.push_back({{"layout.virtual_stages"},
                   "1 unless layout.schedule is interleaved-1f1b, zb-v or dualpipe-v"});
  if (needs.virtual_stages > 1 && l.virtual_stages != needs.virtual_stages)
    out.push_back({{"layout.virtual_stages"},
                   fmt::format("{} for {} (V placement: two chunks per rank)", needs.virtual_stages,
                               schedule)});
  if (needs.microbatches_pp_multiple && l.pp > 0 && l.microbatches % l.pp != 0) {
    out.push_back({{"layout.microbatches", "layout.pp"},
                   fmt::format("layout.microbatches ({}) to be a multiple of layout.pp ({}) for {}",
                               l.microbatches, l.pp, schedule)});
  }
  if (l.microbatches < needs.min_microbatches_per_pp * l.pp) {
    out.push_back({{"layout.microbatches", "layout.pp"},
                   fmt::format("layout.microbatches ({}) to be at least {} * layout.pp ({}) for {}",
                               l.microbatches, needs.min_microbatches_per_pp, l.pp, schedule)});
  }
  const int stages = l.pp * l.virtual_stages;
  if (stages <= 0) return;
  if (l.stage_layers.empty() && m.n_layers % stages != 0) {
    out.push_back({{"layout.pp", "layout.virtual_stages", "model.n_layers"},
                   fmt::format("layout.pp * layout.virtual_stages ({}) to divide model.n_layers "
                               "({}) (or a layout.stage_layers list)",
                               stages, m.n_layers)});
  }
  if (l.stage_layers.empty()) return;
  if (static_cast<int>(l.stage_layers.size()) != stages) {
    out.push_back({{"layout.stage_layers"},
                   fmt::format("layout.pp * layout.virtual_stages = {} entries", stages)});
  } else if (std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), 0) != m.n_layers) {
    out.push_back({{"layout.stage_layers", "model.n_layers"},
                   fmt::format("entries summing to model.n_layers ({})", m.n_layers)});
  } else if (layerless_inner_stage(l.stage_layers) >= 0) {
    out.push_back({{"layout.stage_layers"},
                   "at least 1 layer in every stage but the first (which may hold the embedding "
                   "alone) and the last (the head alone)"});
  }
}

/// Megatron-LM splits heads, the feed-forward width, the vocabulary and, under sequence
/// parallelism, the sequence over the tensor-parallel group. Key/value heads are split where tp
/// divides n_kv_heads (Megatron-Core requires that) and replicated where n_kv_heads divides tp
/// (each on tp / n_kv_heads ranks, as vLLM's QKVParallelLinear does;
/// models/cost/attention_split.hpp).
void check_tensor_parallel(const ModelSpec& m, const LayoutSpec& l, std::vector<Violation>& out) {
  if (l.tp > 1) {
    const auto divides = [&](const std::string& key, int value) {
      if (value % l.tp != 0)
        out.push_back(
            {{"layout.tp", key},
             fmt::format("{} ({}) to be a multiple of layout.tp ({})", key, value, l.tp)});
    };
    divides("model.n_heads", m.n_heads);
    const int kv = m.kv_heads();
    if (m.n_kv_heads > 0 && kv % l.tp != 0 && l.tp % kv != 0)
      out.push_back({{"layout.tp", "model.n_kv_heads"},
                     fmt::format("model.n_kv_heads ({}) to be a multiple or a divisor of layout.tp "
                                 "({}) (key/value heads split or replicated over the "
                                 "tensor-parallel group)",
                                 kv, l.tp)});
    divides("model.ffn_hidden", m.ffn_hidden);
    divides("model.vocab_size", m.vocab_size);
    if (l.sequence_parallel) divides("model.seq_len", m.seq_len);
  }
  if (l.sequence_parallel && l.tp == 1)
    out.push_back({{"layout.sequence_parallel"}, "false unless layout.tp > 1"});
  if (l.tp_comm_overlap && !l.sequence_parallel)
    out.push_back({{"layout.tp_comm_overlap"},
                   "false unless layout.sequence_parallel is true (the overlapped collectives are "
                   "its all-gathers and reduce-scatters)"});
}

/// Context parallelism (layout.cp): each GPU holds seq_len/cp tokens of every sequence, in 2
/// load-balanced chunks under p2p and all_gather (Megatron-Core asserts seq_len % (2·cp) == 0),
/// split again over tp under sequence parallelism; a2a (Ulysses) moves whole heads, so each GPU's
/// query and key/value heads divide among the cp GPUs. Megatron-Core runs it on Transformer
/// Engine's fused (flash) attention only.
void check_context_parallel(const ModelSpec& m, const LayoutSpec& l, std::vector<Violation>& out) {
  if (l.cp == 1) {
    if (l.cp_comm_type != CpCommType::P2p)
      out.push_back({{"layout.cp_comm_type"}, "p2p (the default) unless layout.cp > 1"});
    return;
  }
  if (m.attention != Attention::Flash)
    out.push_back({{"model.attention", "layout.cp"},
                   "flash with layout.cp > 1 (context parallelism runs on fused attention)"});
  const bool chunked = l.cp_comm_type != CpCommType::A2a;
  const int pieces = chunked ? 2 * l.cp : l.cp;
  if (m.seq_len % pieces != 0)
    out.push_back(
        {{"model.seq_len", "layout.cp"},
         fmt::format("model.seq_len ({}) to be a multiple of {} ({} chunks of a sequence over "
                     "layout.cp = {})",
                     m.seq_len, chunked ? "2 · layout.cp" : "layout.cp", pieces, l.cp)});
  else if (l.sequence_parallel && (m.seq_len / l.cp) % l.tp != 0)
    out.push_back({{"model.seq_len", "layout.cp", "layout.tp"},
                   fmt::format("model.seq_len / layout.cp ({}) to be a multiple of layout.tp ({}) "
                               "with sequence parallelism",
                               m.seq_len / l.cp, l.tp)});
  if (l.cp_comm_type == CpCommType::A2a && l.tp > 0 && m.n_heads % l.tp == 0) {
    const int heads = m.n_heads / l.tp, kv = std::max(1, m.kv_heads() / l.tp);
    if (heads % l.cp != 0 || kv % l.cp != 0)
      out.push_back({{"layout.cp", "model.n_heads", "model.n_kv_heads"},
                     fmt::format("layout.cp ({}) to divide the query heads ({}) and key/value "
                                 "heads ({}) of a GPU with cp_comm_type a2a (Ulysses gives each "
                                 "GPU whole heads)",
                                 l.cp, heads, kv)});
  }
}

/// Mixture of experts (model.moe) and expert parallelism, folded as Megatron-Core does: the MoE
/// layers re-partition a stage's dp·cp·tp GPUs as etp × ep × edp, so ep · etp divides dp·cp·tp.
void check_experts(const ModelSpec& m, const LayoutSpec& l, std::vector<Violation>& out) {
  const MoeSpec& e = m.moe;
  if (!e.enabled()) {
    if (l.ep != 1) out.push_back({{"layout.ep"}, "1 unless model.moe is given"});
    if (l.etp != 0) out.push_back({{"layout.etp"}, "absent unless model.moe is given"});
    return;
  }
  if (m.family != ModelFamily::Llama)
    out.push_back({{"model.family", "model.moe"}, "llama with model.moe (SwiGLU experts)"});
  if (l.tp > 1 && !l.sequence_parallel)
    out.push_back({{"layout.sequence_parallel", "model.moe"},
                   "true with model.moe and layout.tp > 1 (Megatron-Core requires it: each GPU "
                   "dispatches its T/tp tokens)"});
  if (e.top_k > e.num_experts)
    out.push_back({{"model.moe.top_k", "model.moe.num_experts"},
                   fmt::format("model.moe.top_k ({}) to be at most model.moe.num_experts ({})",
                               e.top_k, e.num_experts)});
  if (e.num_experts % l.ep != 0)
    out.push_back(
        {{"layout.ep", "model.moe.num_experts"},
         fmt::format("layout.ep ({}) to divide model.moe.num_experts ({})", l.ep, e.num_experts)});
  const int etp = l.expert_tp();
  if ((l.dp_cp() * l.tp) % (l.ep * etp) != 0)
    out.push_back({{"layout.ep", "layout.etp", "layout.dp", "layout.cp", "layout.tp"},
                   fmt::format("layout.ep · layout.etp ({} · {}) to divide layout.dp · layout.cp · "
                               "layout.tp ({} · {} · {}) (the MoE layers re-partition a stage's "
                               "dp·cp·tp GPUs)",
                               l.ep, etp, l.dp, l.cp, l.tp)});
  if (e.expert_ffn_hidden % etp != 0)
    out.push_back({{"layout.etp", "model.moe.expert_ffn_hidden"},
                   fmt::format("model.moe.expert_ffn_hidden ({}) to be a multiple of the expert "
                               "tensor-parallel degree ({})",
                               e.expert_ffn_hidden, etp)});
  if (e.shared_expert_ffn_hidden % l.tp != 0)
    out.push_back({{"model.moe.shared_expert_ffn_hidden", "layout.tp"},
                   fmt::format("model.moe.shared_expert_ffn_hidden ({}) to be a multiple of "
                               "layout.tp ({})",
                               e.shared_expert_ffn_hidden, l.tp)});
  if (e.first_dense_layers >= m.n_layers)
    out.push_back({{"model.moe.first_dense_layers", "model.n_layers"},
                   fmt::format("model.moe.first_dense_layers ({}) to be less than model.n_layers "
                               "({})",
                               e.first_dense_layers, m.n_layers)});
  if (e.pad_to_capacity && e.capacity_factor <= 0)
    out.push_back({{"model.moe.pad_to_capacity", "model.moe.capacity_factor"},
                   "model.moe.capacity_factor with model.moe.pad_to_capacity (padding to a "
                   "capacity needs one)"});
  if (e.load_imbalance < 1)
    out.push_back({{"model.moe.load_imbalance"},
                   "at least 1 (the busiest expert-parallel rank's tokens over the mean)"});
  if (e.peak_load_imbalance > 0 && e.peak_load_imbalance < e.load_imbalance)
    out.push_back({{"model.moe.peak_load_imbalance", "model.moe.load_imbalance"},
                   fmt::format("0 or at least model.moe.load_imbalance ({}): the worst "
                               "microbatch's imbalance, not below the mean's",
                               e.load_imbalance)});
  if (e.peak_load_imbalance > l.ep)
    out.push_back(
        {{"model.moe.peak_load_imbalance", "layout.ep"},
         fmt::format("at most layout.ep ({}): a rank receives at most every copy", l.ep)});
  if (l.hybrid_shard())
    out.push_back({{"layout.dp_shard", "model.moe"},
                   "absent, 0 or layout.dp with model.moe (hybrid sharding of the expert "
                   "data-parallel group is not modelled)"});
  if (l.zero == 3)
    out.push_back({{"layout.zero", "model.moe"},
                   "0, 1 or 2 with model.moe (ZeRO-3's gather units assume dense layers; "
                   "gathering expert layers is not modelled)"});
}

void check_sharding(const LayoutSpec& l, std::vector<Violation>& out) {
  if (l.zero > 0 && l.dp_cp() == 1)
    out.push_back({{"layout.zero", "layout.dp"},
                   "layout.zero = 0 with layout.dp · layout.cp = 1 (ZeRO shards over the "
                   "data-parallel group)"});
  if (l.zero > 0 && l.dp_sync != sched::DpSync::AllReduce)
    out.push_back({{"layout.dp_sync"}, "all-reduce when layout.zero > 0"});
  if (l.overlap_grad_reduce && l.dp_sync != sched::DpSync::AllReduce)
    out.push_back({{"layout.dp_sync"},
                   "all-reduce when layout.overlap_grad_reduce is true (gradient buckets are "
                   "reduced)"});
  if (l.zero3_gather != sched::Zero3Gather::Layer && l.zero != 3)
    out.push_back({{"layout.zero3_gather"},
                   "layer (the default) unless layout.zero = 3 (only ZeRO-3 gathers parameters "
                   "for the passes)"});
  if (l.overlap_param_gather && l.zero == 0)
    out.push_back({{"layout.overlap_param_gather"},
                   "false unless layout.zero is 1, 2 or 3 (only sharded parameters are gathered)"});
  if (l.dp_shard > 0 && l.zero == 0)
    out.push_back({{"layout.dp_shard", "layout.zero"},
                   "absent (0) unless layout.zero is 1, 2 or 3 (dp_shard sets the replicas over "
                   "which ZeRO shards)"});
  if (l.dp_shard > 0 && l.dp % l.dp_shard != 0)
    out.push_back({{"layout.dp_shard", "layout.dp"},
                   fmt::format("layout.dp_shard ({}) to divide layout.dp ({}) (each shard group "
                               "spans dp_shard replicas)",
                               l.dp_shard, l.dp)});
}

void check_training(const TrainingSpec& t, std::vector<Violation>& out) {
  if (t.precision == Precision::Fp32 && t.grad_precision != Precision::Fp32)
    out.push_back({{"training.grad_precision"},
                   "fp32 when training.precision is fp32 (gradients are never narrower than the "
                   "weights)"});
  if (t.grad_precision == Precision::Fp8)
    out.push_back({{"training.grad_precision"},
                   "fp32 or bf16 (fp8 is an operand type of GEMMs, not of gradient buffers)"});
  if (t.fp8_recipe != Fp8Recipe::Delayed && t.precision != Precision::Fp8)
    out.push_back(
        {{"training.fp8_recipe"}, "delayed (the default) unless training.precision is fp8"});
}

void check_fp8_param_gather(const Scenario& sc, std::vector<Violation>& out) {
  if (!sc.training.fp8_param_gather) return;
  if (sc.training.precision != Precision::Fp8)
    out.push_back({{"training.fp8_param_gather"}, "false unless training.precision is fp8"});
  else if (sc.layout.zero == 0)
    out.push_back({{"training.fp8_param_gather"},
                   "false unless layout.zero is 1, 2 or 3 (only sharded parameters are gathered)"});
}

void check_fp8_device(const Scenario& sc, std::vector<Violation>& out) {
  const DeviceSpec& d = sc.cluster.device;
  if (sc.training.precision == Precision::Fp8 && !(d.description && d.description->has_fp8()))
    out.push_back({{"cluster.device.model", "training.precision"},
                   "a device with fp8 tensor cores (fp8_flops in its description) when "
                   "training.precision is fp8"});
  if (sc.training.precision == Precision::Fp8 && sc.model.moe.enabled())
    out.push_back({{"training.precision", "model.moe"},
                   "fp32 or bf16 with model.moe (fp8 expert GEMMs are not modelled)"});
}

void check_cluster(const Scenario& sc, std::vector<Violation>& out) {
  const ClusterSpec& c = sc.cluster;
  if (sc.layout.offload != Offload::None && c.device.host_link.bandwidth <= 0)
    out.push_back({{"layout.offload"},
                   "none unless cluster.device.host_link is given (offloaded state moves over "
                   "it)"});
  if (c.topology == Topology::FatTree && c.nodes_per_switch > 0 && c.nodes % c.nodes_per_switch)
    out.push_back({{"cluster.nodes_per_switch", "cluster.nodes"},
                   fmt::format("cluster.nodes ({}) to be a multiple of nodes_per_switch ({}) for a "
                               "fat-tree",
                               c.nodes, c.nodes_per_switch)});
  const long long slots = 1LL * c.nodes * c.devices_per_node * c.ranks_per_device;
  if (sc.world_size() != slots)
    out.push_back({{"layout.dp", "layout.cp", "layout.pp", "layout.tp", "cluster.nodes",
                    "cluster.devices_per_node", "cluster.ranks_per_device"},
                   fmt::format("dp*cp*pp*tp = {} ranks to match "
                               "nodes*devices_per_node*ranks_per_device = {}",
                               sc.world_size(), slots)});
}

}  // namespace

std::string Violation::message(const Scenario& scenario) const {
  const FieldSpec* field = find_field(keys.front());
  const std::string value = field != nullptr ? render_value(field->get(scenario)) : "";
  return fmt::format("{}: expected {}, got '{}'", keys.front(), expected, value);
}

std::vector<Violation> validate(const Scenario& sc) {
  std::vector<Violation> out;
  check_ranges(sc, out);
  if (!out.empty()) return out;  // the rules below assume every value in its range
  check_model(sc.model, out);
  check_encoder(sc.model, sc.layout, out);
  if (!is_encoder(sc.model.family) && sc.training.dataset != TrainingSpec{}.dataset)
    out.push_back({{"training.dataset"},
                   "absent unless model.family is bert or distilbert (decoders read the corpus)"});
  if (is_encoder(sc.model.family) && sc.runtime.fused_kernels)
    out.push_back({{"runtime.fused_kernels"},
                   "false for bert and distilbert (the fused kernels are a LLaMA's)"});
  check_global_batch(sc.layout, out);
  check_pipeline(sc.model, sc.layout, out);
  check_tensor_parallel(sc.model, sc.layout, out);
  check_context_parallel(sc.model, sc.layout, out);
  check_experts(sc.model, sc.layout, out);
  check_sharding(sc.layout, out);
  check_training(sc.training, out);
  if (!is_encoder(sc.model.family) && sc.training.epochs > 0)
    out.push_back({{"training.epochs"},
                   "0 unless model.family is bert or distilbert (decoders count training.steps)"});
  // With epochs the runtime sets the steps from the data set, and checks the warm-up there.
  if (sc.training.epochs == 0 && sc.training.warmup_steps > sc.training.steps)
    out.push_back({{"training.steps", "training.warmup_steps"},
                   fmt::format("at least training.warmup_steps ({})", sc.training.warmup_steps)});
  check_fp8_param_gather(sc, out);
  check_cluster(sc, out);
  check_fp8_device(sc, out);
  return out;
}

}  // namespace dtwin
