#include "models/cost/cost_model.hpp"

#include "models/cost/attention_split.hpp"
#include "models/cost/context_parallel.hpp"
#include "models/cost/layer_host_stall.hpp"
#include "models/cost/layer_ops.hpp"
#include "models/cost/moe_layer.hpp"
#include "models/cost/nccl_model.hpp"
#include "models/cost/parallel_memory.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtwin {
namespace {

/// AdamW's element-wise FLOPs per parameter per step (an estimate; see the class comment).
constexpr double kAdamFlopsPerParam = 12;
/// Bytes per parameter of the weights that weight averaging moves: the fp32 (master) weights.
constexpr double kMasterBytesPerParam = 4;
/// Bytes per element of the logits the loss works on: fp32 at either training precision.
constexpr double kLossBytesPerElement = 4;

/// The dimensions of one family's layers, as doubles (products overflow int).
struct Shape {
  double layer_params = 0;  ///< all parameters of a transformer layer
  double layer_matmul = 0;  ///< its weights that enter a matrix product
  /// The same two counts over a layer's tensor-parallel group: a key/value head replicated on
  /// several GPUs (tp > n_kv_heads, models/cost/attention_split.hpp) counted on each of them.
  double layer_params_held = 0;
  double layer_matmul_held = 0;
  double embedding = 0;    ///< the first stage's lookup tables
  double final_norm = 0;   ///< the last stage's norm
  double head = 0;         ///< the head's parameters: the LM head's matrix, or an encoder's
  bool tied_head = false;  ///< the head is the token embedding
  double lookup_only = 0;  ///< lookup tables never used as a matrix product
  /// The head reads this fraction of the tokens: all (an LM head), or the first of each
  /// sequence, 1/s (an encoder's classification head).
  double head_token_fraction = 1;
  /// Columns the head's GEMMs produce per token it reads, each over d inputs: V (the logits),
  /// or d + L for an encoder (the pooler's d, the classifier's L logits).
  double head_width = 0;
};

/// The layers of `m` on a tensor-parallel group of `tp` (see cost_model.hpp's file comment).
Shape shape_of(const ModelSpec& m, int tp) {
  const double d = m.d_model, f = m.ffn_hidden, V = m.vocab_size, s = m.seq_len;
  const AttentionSplit heads = attention_split(m, tp);
  const double kv_width = heads.kv * heads.head_dim;                  // of K, and of V
  const double copies = (heads.kv_held - heads.kv) * heads.head_dim;  // replicated K (V) width
  const double attention = 2 * d * d + 2 * d * kv_width;  // q and o d×d, k and v d×kv·hd
  Shape shape;
  shape.head = V * d;
  shape.head_width = V;
  switch (m.family) {
    case ModelFamily::Llama:
      shape.layer_matmul = attention + 3 * d * f;
      shape.layer_params = shape.layer_matmul + 2 * d;  // two RMSNorm weights
      shape.layer_matmul_held = shape.layer_matmul + 2 * d * copies;
      shape.layer_params_held = shape.layer_params + 2 * d * copies;
      shape.embedding = V * d;
      shape.final_norm = d;
      shape.lookup_only = V * d;  // the token embedding; the untied head is a matrix product
      return shape;
    case ModelFamily::Gpt2:
      shape.layer_matmul = attention + 2 * d * f;
      // attention biases 2d + 2·kv·hd, MLP biases f + d, two LayerNorms (weight + bias) 4d
      shape.layer_params = shape.layer_matmul + 2 * d + 2 * kv_width + f + d + 4 * d;
      shape.layer_matmul_held = shape.layer_matmul + 2 * d * copies;
      shape.layer_params_held = shape.layer_params + 2 * (d + 1) * copies;
      shape.embedding = V * d + s * d;  // token + position embeddings
      shape.final_norm = 2 * d;
      shape.tied_head = true;
      shape.lookup_only = s * d;  // the position embedding; the token embedding is also the head
      return shape;
    case ModelFamily::Bert:
    case ModelFamily::DistilBert: {
      // gpt2's layer (post- instead of pre-LayerNorm: the same weights)
      shape.layer_matmul = attention + 2 * d * f;
      shape.layer_params = shape.layer_matmul + 2 * d + 2 * kv_width + f + d + 4 * d;
      shape.layer_matmul_held = shape.layer_matmul + 2 * d * copies;
      shape.layer_params_held = shape.layer_params + 2 * (d + 1) * copies;
      const double types = m.family == ModelFamily::Bert ? 2 : 0;  // token-type rows
      shape.lookup_only = (V + m.positions() + types) * d;
      shape.embedding = shape.lookup_only + 2 * d;  // and the embeddings' LayerNorm
      const double L = m.num_labels;
      shape.head = d * d + d + d * L + L;  // pooler (pre-classifier) and classifier, with biases
      shape.head_token_fraction = 1 / s;
      shape.head_width = d + L;
      return shape;
    }
  }
  throw std::logic_error("CostModel: model.family " +
                         std::string(kModelFamilyNames.name(m.family)) + " has no shape");
}

/// Bytes of a stored weight or activation element: bf16's under fp8.
double bytes_per_element_of(Precision precision) {
  return element_bytes(storage_precision(precision));
}

/// Seconds of one tensor-parallel collective of `bytes` over a group of `t` consecutive GPUs
/// (the tensor-parallel group, or the expert tensor-parallel one), on the intra-node link when
/// the group fits in a node's rank slots (Megatron-LM places it there), else on the inter-node
/// link. Under NCCL (nccl_collectives) NCCL's time for its fastest algorithm and protocol
/// (models/cost/nccl_model.hpp): an all-reduce, or with sequence parallelism an all-gather and a
/// reduce-scatter of the same bytes. Otherwise a ring all-reduce, 2(t−1)(α + bytes/(t·β)), for
/// both. 0 when t = 1.
double tp_collective_seconds(const Scenario& scenario, double bytes, int t) {
  if (t == 1) return 0;
  const ClusterSpec& c = scenario.cluster;
  const int node = c.devices_per_node * c.ranks_per_device;
  const LinkSpec& link = t <= node ? c.intra_node : c.inter_node;
  if (!nccl_collectives(scenario))
    return 2 * ring_half_seconds(bytes, t, link.bandwidth, link.latency);
  const NcclGroup group{t, (t + node - 1) / node};
  const auto seconds = [&](NcclCollective collective) {
    return nccl_collective(collective, bytes, group, link.bandwidth).seconds;
  };
  return scenario.layout.sequence_parallel
             ? seconds(NcclCollective::AllGather) + seconds(NcclCollective::ReduceScatter)
             : seconds(NcclCollective::AllReduce);
}

/// Seconds of the operators of `kind` in one layer's `pass` on one GPU.
double layer_kind_seconds(const DeviceDescription& device, const Scenario& scenario, Pass pass,
                          OpKind kind) {
  double seconds = 0;
  const Precision precision = scenario.training.precision;
  for (const Op& op :
       layer_ops(scenario.model, scenario.layout, precision, pass, scenario.training.fp8_recipe))
    if (op.kind == kind) seconds += op_seconds(device, op, precision);
  return seconds;
}

/// Seconds of one layer's GEMMs on one GPU that tensor-parallel collectives can overlap: F's, and
/// I's with W's (Transformer Engine hides the backward's all-gathers under the weight-gradient
/// GEMMs), full recomputation's repeated forward included. From the device description's GEMM
/// kernels, else the GEMM FLOPs at the device's peak · efficiency.
PassSeconds overlappable_gemm_seconds(const Scenario& scenario, double matmul_flops) {
  const LayoutSpec& l = scenario.layout;
  const DeviceSpec& device = scenario.cluster.device;
  PassSeconds gemm;
  if (device.description) {
    const auto sum = [&](Pass pass) {
      return layer_kind_seconds(*device.description, scenario, pass, OpKind::Gemm);
    };
    gemm = {sum(Pass::Forward), sum(Pass::InputBackward), sum(Pass::WeightBackward)};
  } else {
    const double seconds = matmul_flops / (device.peak_flops * device.efficiency);
    gemm = {seconds, seconds, seconds};
  }
  gemm.input_backward += gemm.weight_backward;
  if (l.recompute == Recompute::Full) gemm.input_backward += gemm.forward;
  return gemm;
}

/// Seconds that `comm` seconds of tensor-parallel collectives add to a pass whose GEMMs take
/// `gemm` seconds when they overlap those GEMMs (layout.tp_comm_overlap): what the GEMMs do not
/// hide, plus the stretch of the GEMMs that run beside communication (the device's
/// overlap_slowdown, 1 without a description: the collectives' kernels take SMs).
double overlapped_tp_seconds(double comm, double gemm, double slowdown) {
  return std::max(0.0, comm - gemm) + (slowdown - 1) * std::min(comm, gemm);
}

/// The parameters of `params` whose optimizer state one GPU holds and updates: its 1/tp slice,
/// and 1/(dp·cp) of that under ZeRO (1/(dp_shard·cp) under hybrid sharding: zero_group()).
double optimizer_shard(const LayoutSpec& l, double params) {
  return params / l.tp / (l.zero >= 1 ? l.zero_group() : 1);
}

/// Seconds a layer's context-parallel exchange adds to F and to I (or B): cp_exposed_seconds
/// against the pass's attention, from the device description's attention kernels or else the
/// layer's forward `attention_flops` (twice them in I) at the device's peak · efficiency. Under
/// recomputation the backward re-runs the attention, its forward exchange with it.
PassSeconds layer_cp_seconds(const Scenario& scenario, double tokens_per_gpu, double bpe,
                             double attention_flops) {
  const ModelSpec& m = scenario.model;
  const LayoutSpec& l = scenario.layout;
  if (l.cp == 1) return {};
  const DeviceSpec& device = scenario.cluster.device;
  PassSeconds attention;
  if (device.description) {
    attention.forward =
        layer_kind_seconds(*device.description, scenario, Pass::Forward, OpKind::Attention);
    attention.input_backward =
        layer_kind_seconds(*device.description, scenario, Pass::InputBackward, OpKind::Attention);
  } else if (device.peak_flops * device.efficiency > 0) {
    attention.forward = attention_flops / (device.peak_flops * device.efficiency);
    attention.input_backward = 2 * attention.forward;
  }
  PassSeconds exposed;
  exposed.forward = cp_exposed_seconds(
      scenario, cp_exchange_bytes(m, l, tokens_per_gpu, bpe, false), attention.forward, false);
  exposed.input_backward = cp_exposed_seconds(
      scenario, cp_exchange_bytes(m, l, tokens_per_gpu, bpe, true), attention.input_backward, true);
  if (l.recompute != Recompute::None) exposed.input_backward += exposed.forward;
  return exposed;
}

/// The parameters of stage `c` whose optimizer state one GPU holds and updates: optimizer_shard
/// of its dense parameters, and of its MoE layers' experts the GPU's expert_params_per_gpu, / edp
/// under ZeRO (Megatron-Core's distributed optimizer shards expert states over the expert
/// data-parallel group).
double stage_optimizer_params(const Scenario& scenario, const StageCost& c) {
  const LayoutSpec& l = scenario.layout;
  const double experts = c.moe_layers * expert_params_per_gpu(scenario.model, l);
  return optimizer_shard(l, c.params - experts * l.tp) +
         experts / (l.zero >= 1 ? l.expert_dp() : 1);
}

/// Seconds of one transformer layer's passes on one GPU, a dense one or (`moe`) a MoE one, the
/// forward that recomputation repeats included in input_backward (see the class comment).
PassSeconds layer_kernel_seconds(const DeviceDescription& device, const Scenario& scenario,
                                 bool moe) {
  const LayoutSpec& l = scenario.layout;
  const Precision precision = scenario.training.precision;
  PassSeconds layer =
      moe ? moe_layer_seconds(device, scenario.model, l, precision)
          : layer_seconds(device, scenario.model, l, precision, scenario.training.fp8_recipe);
  if (l.recompute == Recompute::Full) layer.input_backward += layer.forward;
  if (l.recompute == Recompute::Selective)
    layer.input_backward += layer_kind_seconds(device, scenario, Pass::Forward, OpKind::Attention);
  return layer;
}

/// KernelSeconds of stage `c` from its dense layers' `layer` and its MoE layers' `moe` seconds
/// (see the class comment).
KernelSeconds stage_kernel_seconds(const DeviceDescription& device, const Scenario& scenario,
                                   const PassSeconds& layer, const PassSeconds& moe,
                                   const StageCost& c, double tp_collective_s) {
  const ModelSpec& m = scenario.model;
  const LayoutSpec& l = scenario.layout;
  const Precision precision = scenario.training.precision;
  const double L = c.num_layers - c.moe_layers, Lm = c.moe_layers;
  KernelSeconds k{L * layer.forward + Lm * moe.forward,
                  L * layer.input_backward + Lm * moe.input_backward,
                  L * layer.weight_backward + Lm * moe.weight_backward, 0, 0};
  const auto add = [&k](const PassSeconds& p) {
    k.forward += p.forward;
    k.input_backward += p.input_backward;
    k.weight_backward += p.weight_backward;
  };
  if (c.has_embedding) add(embedding_seconds(device, m, l, precision));
  if (c.has_head) add(head_seconds(device, m, l, precision));
  k.backward = k.input_backward + k.weight_backward;
  if (c.num_layers > 0) {
    const HostStall stall = layer_host_stall(device, scenario, c.num_layers, tp_collective_s);
    k.forward += stall.forward;
    k.input_backward += stall.input_backward;
    k.weight_backward += stall.weight_backward;
    k.backward += stall.backward;
  }
  k.optimizer = optimizer_seconds(device, stage_optimizer_params(scenario, c));
  return k;
}

/// Host transfers of layout.offload (see the class comment); the GPU no longer runs the optimizer.
void add_offload_transfers(const Scenario& scenario, double bpe, double grad_bpe, StageCost& c) {
  const LayoutSpec& l = scenario.layout;
  if (l.offload == Offload::None) return;
  const LinkSpec& host = scenario.cluster.device.host_link;
  const double shard = stage_optimizer_params(scenario, c);
  const auto transfer = [&host](double bytes) { return host.latency + bytes / host.bandwidth; };
  // gradients down, updated weights up
  c.host_optimizer_s = transfer(shard * grad_bpe) + transfer(shard * bpe);
  c.optimizer_flops = 0;
  if (c.kernel) c.kernel->optimizer = 0;
  if (l.offload == Offload::OptimizerParams) c.host_pass_s = transfer(c.params / l.tp * bpe);
}

}  // namespace

CostModel::CostModel(const Scenario& scenario)
    : model_(scenario.model),
      layout_(scenario.layout),
      bytes_per_element_(bytes_per_element_of(scenario.training.precision)),
      grad_bytes_per_element_(bytes_per_element_of(scenario.training.grad_precision)),
      fp8_(scenario.training.precision == Precision::Fp8),
      fp8_param_gather_(scenario.training.fp8_param_gather),
      fp8_recipe_(scenario.training.fp8_recipe) {
  const Shape shape = shape_of(model_, scenario.layout.tp);
  const StagePartition partition(scenario);
  bucket_params_ = partition.bucket_params;
  const double T = tokens_per_microbatch();  // on one GPU of a context-parallel group
  const double s = model_.seq_len, d = model_.d_model, V = model_.vocab_size, a = model_.n_heads,
               b = scenario.layout.micro_batch_size;
  const double bpe = bytes_per_element_;
  const LayoutSpec& l = scenario.layout;
  const double t = l.tp;
  const double sp_shard = l.sequence_parallel ? t : 1;  // sequence-parallel regions hold s/t

  // Per layer, per microbatch, per GPU of the tensor-parallel group.
  const double matmul_flops = 2 * T * shape.layer_matmul_held / t;  // the weight products' forward
  const double attention_flops = 4 * T * s * d / t;  // QKᵀ and AV of T queries over s keys
  LayerActivationShape layer_shape{
      s / l.cp, b, d, a, double(model_.ffn_hidden), l.tp, l.sequence_parallel, model_.family};
  layer_shape.kv_ratio = attention_split(model_, l.tp).kv_held / a;
  // At fp8 the linear layers keep their inputs quantized (parallel_memory.hpp).
  const auto layer_bytes = [&](Recompute recompute) {
    return layer_activation_bytes(layer_shape, recompute, model_.attention, bpe) -
           (fp8_ ? fp8_saved_input_reduction(layer_shape, recompute, bpe) : 0);
  };
  const double layer_activation = layer_bytes(l.recompute);
  const double layer_input_backward_freed =
      input_backward_freed_bytes(layer_shape, l.recompute, model_.attention, bpe);
  // With full recomputation the layer whose backward runs holds its recomputed activations, all
  // of them, until that backward ends (Chen et al. 2016 §3).
  const double recomputed_layer = l.recompute == Recompute::Full ? layer_bytes(Recompute::None) : 0;
  const double head_tokens = T * shape.head_token_fraction;  // the tokens the head reads
  const double head_flops = 2 * head_tokens * d * shape.head_width / t;
  // Recomputation re-runs part of the forward inside the backward (Korthikanti et al. 2022 §4):
  // full the whole layer, selective the attention core.
  const double recompute_flops = l.recompute == Recompute::Full ? matmul_flops + attention_flops
                                 : l.recompute == Recompute::Selective ? attention_flops
                                                                       : 0;
  // Megatron's f/g operators: 2 all-reduces of b·s·h per layer in the forward and 2 in the input
  // backward (Narayanan et al. 2021 §3.2); with sequence parallelism all-gathers and
  // reduce-scatters of the same volume and time (Korthikanti et al. 2022 §4.2.2). Full
  // recomputation repeats the forward's 2.
  const double tp_collective = tp_collective_seconds(scenario, T * d * bpe, l.tp);
  const int recompute_collectives = l.recompute == Recompute::Full ? 2 : 0;
  const auto& device = scenario.cluster.device.description;
  const std::optional<PassSeconds> layer_kernel =
      device ? std::optional(layer_kernel_seconds(*device, scenario, false)) : std::nullopt;
  // A MoE layer (model.moe, llama) against a dense one: its feed-forward's FLOPs and parameters
  // instead of the dense MLP's 3·d·f, its activations, and the dispatch and combine all-to-alls.
  const bool moe = model_.moe.enabled();
  const double dense_mlp = 3 * d * model_.ffn_hidden;
  const double moe_matmul_flops =
      moe ? matmul_flops - 2 * T * dense_mlp / t + moe_ffn_forward_flops(model_, l, T) : 0;
  const double moe_layer_params =
      moe ? shape.layer_params_held - dense_mlp + moe_ffn_params(model_) -
                expert_params(model_.moe, model_.d_model) + t * expert_params_per_gpu(model_, l)
          : 0;
  const double moe_activation =
      moe ? moe_layer_activation_bytes(model_, l, layer_shape, l.recompute, bpe) : 0;
  const double moe_input_backward_freed =
      moe ? moe_input_backward_freed_bytes(model_, l, layer_shape, l.recompute, bpe) : 0;
  const double moe_recomputed_layer =
      moe && l.recompute == Recompute::Full
          ? moe_layer_activation_bytes(model_, l, layer_shape, Recompute::None, bpe)
          : 0;
  const double all_to_all =
      moe ? moe_all_to_all_seconds(scenario, moe_all_to_all_bytes(model_, l, T, bpe)) : 0;
  const std::optional<PassSeconds> moe_kernel =
      device && moe ? std::optional(layer_kernel_seconds(*device, scenario, true)) : std::nullopt;
  // Per layer: the collectives' seconds each pass adds (overlapped with GEMMs or not).
  double layer_tp_forward = 2 * tp_collective;
  double layer_tp_input_backward = (2 + recompute_collectives) * tp_collective;
  if (l.tp_comm_overlap) {
    const PassSeconds gemm = overlappable_gemm_seconds(scenario, matmul_flops);
    const double slowdown = device ? device->overlap_slowdown : 1;
    layer_tp_forward = overlapped_tp_seconds(layer_tp_forward, gemm.forward, slowdown);
    layer_tp_input_backward =
        overlapped_tp_seconds(layer_tp_input_backward, gemm.input_backward, slowdown);
  }
  const PassSeconds layer_cp = layer_cp_seconds(scenario, T, bpe, attention_flops);
  // A MoE layer keeps the attention's pair of collectives (half the dense layer's, overlapped
  // alike) and replaces the MLP's with the experts' all-gather and reduce-scatter over etp, which
  // nothing overlaps: once in F, once in I, once more in I under full recomputation.
  const double expert_tp =
      moe ? tp_collective_seconds(scenario, moe_expert_tp_bytes(model_, l, T, bpe), l.expert_tp())
          : 0;
  const double moe_layer_tp_forward = layer_tp_forward / 2 + expert_tp;
  const double moe_layer_tp_input_backward =
      layer_tp_input_backward / 2 + (1 + recompute_collectives / 2) * expert_tp;

  for (const StageLayers& layers : partition.stages) {
    StageCost c;
    static_cast<StageLayers&>(c) = layers;

    const double L = c.num_layers;
    c.moe_layers = moe_layers_in(model_, c.first_layer, c.num_layers);
    const double Lm = c.moe_layers, Ld = L - Lm;  // MoE and dense layers
    const double moe_recompute =
        l.recompute == Recompute::Full ? Lm * (moe_matmul_flops - matmul_flops) : 0;
    c.params = Ld * shape.layer_params_held + Lm * moe_layer_params;
    c.forward_flops = Ld * matmul_flops + Lm * moe_matmul_flops + L * attention_flops;
    c.recompute_flops = L * recompute_flops + moe_recompute;
    c.input_backward_flops =
        Ld * matmul_flops + Lm * moe_matmul_flops + 2 * L * attention_flops + c.recompute_flops;
    c.weight_backward_flops = Ld * matmul_flops + Lm * moe_matmul_flops;
    c.activation_bytes = Ld * layer_activation + Lm * moe_activation;
    c.input_backward_freed_bytes = Ld * layer_input_backward_freed + Lm * moe_input_backward_freed;
    if (Ld > 0) c.backward_workspace_bytes = recomputed_layer;
    if (Lm > 0)
      c.backward_workspace_bytes = std::max(c.backward_workspace_bytes, moe_recomputed_layer);
    // Each MoE layer's dispatch and combine all-to-alls in F, again on the gradients in I, and
    // once more in I under full recomputation.
    c.tp_forward_s =
        Ld * layer_tp_forward + Lm * (moe_layer_tp_forward + 2 * all_to_all) + L * layer_cp.forward;
    c.tp_input_backward_s =
        Ld * layer_tp_input_backward +
        Lm * (moe_layer_tp_input_backward + (2 + recompute_collectives) * all_to_all) +
        L * layer_cp.input_backward;
    if (l.tp > 1) {
      c.tp_forward_collectives = 2 * c.num_layers;
      c.tp_input_backward_collectives = (2 + recompute_collectives) * c.num_layers;
    }
    if (c.has_embedding) {
      c.params += shape.embedding;
      c.activation_bytes += T * d * bpe / sp_shard;
      if (l.tp > 1) {  // the vocabulary-parallel lookup's sum
        c.tp_forward_s += tp_collective;
        ++c.tp_forward_collectives;
      }
    }
    if (c.has_head) {
      // A tied head is the embedding itself on a single stage, a copy of it otherwise.
      const bool head_is_embedding = shape.tied_head && c.has_embedding;
      c.params += shape.final_norm + (head_is_embedding ? 0 : shape.head);
      c.forward_flops += head_flops;
      c.input_backward_flops += head_flops;
      c.weight_backward_flops += head_flops;
      // The loss runs on fp32 logits at either precision (models/nn/stage_module.cpp), as
      // Megatron-LM's does (Korthikanti et al. 2022 §4.3: 4·s·b·v bytes): it keeps their
      // log-softmax, and its backward holds two fp32 logit-sized gradients more.
      // An encoder's head keeps its pooled [CLS] states and logits, fp32 likewise.
      const double head_outputs = head_tokens * shape.head_width / t;
      c.activation_bytes += head_outputs * kLossBytesPerElement;
      // A split backward's I frees the log-softmax and stashes the logits' gradient for the
      // head's W at the compute precision.
      c.input_backward_freed_bytes += head_outputs * (kLossBytesPerElement - bpe);
      c.backward_workspace_bytes =
          std::max(c.backward_workspace_bytes, 2 * head_outputs * kLossBytesPerElement);
      if (l.tp > 1) {  // the head input's gradient sum
        c.tp_input_backward_s += tp_collective;
        ++c.tp_input_backward_collectives;
      }
    }
    c.optimizer_flops = kAdamFlopsPerParam * stage_optimizer_params(scenario, c);
    const double largest_tensor =
        l.zero > 0 ? stage_optimizer_params(scenario, c)
                   : std::max({L > 0 ? std::max(d, double(model_.ffn_hidden)) * d / t : 0.0,
                               c.has_embedding || c.has_head ? V * d / t : 0.0});
    c.optimizer_workspace_bytes = 2 * kMasterBytesPerParam * largest_tensor;
    if (device)
      c.kernel = stage_kernel_seconds(*device, scenario, *layer_kernel,
                                      moe_kernel.value_or(PassSeconds{}), c, layer_tp_forward / 2);
    add_offload_transfers(scenario, bpe, grad_bytes_per_element_, c);
    stages_.push_back(c);
  }
}

const StageCost& CostModel::stage(int s) const {
  if (s < 0 || s >= num_stages()) {
    throw std::out_of_range("CostModel::stage: no stage " + std::to_string(s) + " of " +
                            std::to_string(num_stages()));
  }
  return stages_[s];
}

double CostModel::boundary_bytes() const {
  return tokens_per_microbatch() * model_.d_model * bytes_per_element_;
}

double CostModel::gradient_bytes(int s) const {
  return stage(s).params * grad_bytes_per_element_;
}

double CostModel::expert_gradient_bytes(int s) const {
  if (layout_.ep == 1) return 0;
  return stage(s).moe_layers * layout_.tp * expert_params_per_gpu(model_, layout_) *
         grad_bytes_per_element_;
}

double CostModel::data_parallel_gradient_bytes(int s) const {
  const double experts = expert_gradient_bytes(s);
  const double n = layout_.dp_cp(), edp = layout_.expert_dp();
  const double ratio = n > 1 ? ((edp - 1) / edp) / ((n - 1) / n) : 0;
  return gradient_bytes(s) - experts + experts * ratio;
}

double CostModel::weight_bytes(int s) const {
  if (!fp8_param_gather_) return stage(s).params * bytes_per_element_;
  const double fp8 = layer_linear_weights(s);
  return fp8 * fp8_copies_bytes_per_element(fp8_recipe_, Fp8Operand::Weight) / 2 +
         (stage(s).params - fp8) * bytes_per_element_;
}

double CostModel::bucket_params() const {
  return bucket_params_;
}

double CostModel::parameter_bytes(int s) const {
  return stage(s).params * kMasterBytesPerParam;
}

double CostModel::static_memory_bytes(int s) const {
  // A MoE stage's experts shard over edp (expert_state_bytes_per_gpu), the rest over the ZeRO
  // group (dp·cp, or dp_shard·cp under hybrid sharding).
  const double moe = stage(s).moe_layers;
  const double experts = moe * expert_params_per_gpu(model_, layout_);
  return model_state_bytes(stage(s).params / layout_.tp - experts, layout_.zero,
                           layout_.zero_group(), layout_.offload, bytes_per_element_,
                           grad_bytes_per_element_) +
         moe * expert_state_bytes_per_gpu(model_, layout_, bytes_per_element_,
                                          grad_bytes_per_element_) +
         fp8_weight_bytes(s);
}

double CostModel::fp8_weight_bytes(int s) const {
  if (!fp8_) return 0;
  const double weights =
      layer_linear_weights(s) / layout_.tp / (layout_.zero >= 3 ? layout_.zero_group() : 1);
  return weights * fp8_copies_bytes_per_element(fp8_recipe_, Fp8Operand::Weight);
}

double CostModel::layer_linear_weights(int s) const {
  return stage(s).num_layers * shape_of(model_, layout_.tp).layer_matmul_held;
}

double CostModel::gathered_unit_params(int s) const {
  const StageCost& c = stage(s);
  const Shape shape = shape_of(model_, layout_.tp);
  std::vector<double> units(std::min(c.num_layers, 2), shape.layer_params_held);
  const double rest = c.params - c.num_layers * shape.layer_params_held;  // embedding and head
  const double embedding = c.has_embedding ? std::min(shape.embedding, rest) : 0;
  if (embedding > 0) units.push_back(embedding);
  if (rest - embedding > 0) units.push_back(rest - embedding);
  std::sort(units.begin(), units.end(), std::greater<>());
  return units.size() < 2 ? c.params : units[0] + units[1];
}

int CostModel::gather_units(int s) const {
  const StageCost& c = stage(s);
  return std::max(1, c.num_layers + (c.has_embedding ? 1 : 0) + (c.has_head ? 1 : 0));
}

double CostModel::gathered_weight_bytes(int s) const {
  const double params = layout_.gathers_layers() ? gathered_unit_params(s) : stage(s).params;
  return params / layout_.tp * weight_bytes(s) / stage(s).params;
}

double CostModel::gathered_gradient_bytes(int s) const {
  const double params = layout_.gathers_layers() ? gathered_unit_params(s) : stage(s).params;
  return params / layout_.tp * grad_bytes_per_element_ * (1 - 1.0 / layout_.zero_group());
}

double CostModel::total_params() const {
  const Shape shape = shape_of(model_, layout_.tp);
  // A MoE layer's feed-forward is moe_ffn_params, not 3·d·f (no MoE layers: none).
  const double moe_extra =
      moe_layers(model_) * (moe_ffn_params(model_) - 3.0 * model_.d_model * model_.ffn_hidden);
  return shape.embedding + model_.n_layers * shape.layer_params + moe_extra + shape.final_norm +
         (shape.tied_head ? 0 : shape.head);
}

double CostModel::non_embedding_params() const {
  return total_params() - shape_of(model_, layout_.tp).lookup_only;
}

double CostModel::model_flops_per_token() const {
  const double L = model_.n_layers, d = model_.d_model, s = model_.seq_len;
  // A MoE layer's token uses only its active feed-forward weights (top_k experts, shared, router).
  const double inactive =
      moe_layers(model_) * (moe_ffn_params(model_) - moe_active_ffn_params(model_));
  // An encoder's head runs once per sequence, on its first token (Shape::head_token_fraction).
  const Shape shape = shape_of(model_, layout_.tp);
  const double head = shape.tied_head ? 0 : shape.head;
  return 6 * (non_embedding_params() - inactive - head) + 6 * head * shape.head_token_fraction +
         12 * L * d * s;
}

double CostModel::tokens_per_microbatch() const {
  return static_cast<double>(layout_.micro_batch_size) * model_.seq_len / layout_.cp;
}

}  // namespace dtwin
