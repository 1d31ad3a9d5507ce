// A scenario: the model, the parallel layout, the training settings, the cluster and the
// runtime of one dtwin job, as read from a YAML file (see scenarios/quickstart.yaml).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/spec/device_description.hpp"
#include "models/spec/settings.hpp"
#include "schedules/schedule.hpp"

namespace dtwin {

/// Mixture-of-experts feed-forward (model.moe; Shazeer et al. 2017, GShard, Switch, Mixtral,
/// DeepSeek-V3): in each MoE layer a router sends every token to top_k of num_experts SwiGLU
/// experts of width expert_ffn_hidden, beside an always-used shared expert of width
/// shared_expert_ffn_hidden (0 = none). num_experts 0 = a dense model (no model.moe section).
struct MoeSpec {
  int num_experts = 0;
  int top_k = 0;
  int expert_ffn_hidden = 0;
  int shared_expert_ffn_hidden = 0;  ///< 0 = no shared expert
  int first_dense_layers = 0;        ///< the first k layers keep the dense feed-forward
  /// GShard's capacity factor: an expert takes at most capacity_factor·T·top_k/num_experts
  /// tokens of a microbatch, the rest dropped; 0 = dropless (no cap).
  double capacity_factor = 0;
  /// With a capacity factor: every expert's input padded to its capacity, so that the
  /// all-to-alls and expert GEMMs have fixed sizes (Megatron-Core's
  /// --moe-pad-expert-input-to-capacity).
  bool pad_to_capacity = false;
  /// A user-given planning factor >= 1: the tokens the busiest expert-parallel rank receives over
  /// the mean, T·top_k/ep. It scales the expert GEMMs and the all-to-alls, which wait for the
  /// busiest rank. 1 = perfectly balanced routing.
  double load_imbalance = 1;
  /// The busiest expert-parallel rank's copies over the mean in its worst microbatch (its MoE
  /// layers together), which sets the expert activations a dropless rank holds at its memory
  /// peak; 0 = load_imbalance. The mean sets the time, the tail the memory.
  double peak_load_imbalance = 0;
  /// peak_load_imbalance, or load_imbalance where it is 0.
  double peak_imbalance() const {
    return peak_load_imbalance > 0 ? peak_load_imbalance : load_imbalance;
  }
  Router router = Router::Softmax;
  /// α of the load-balancing auxiliary loss α·E·Σ f_i·P_i (Switch Transformer eq. 4).
  double aux_loss_coeff = 0.01;
  /// γ of the sigmoid router's expert-bias step b_i += γ·sign(mean load − load_i) per step
  /// (DeepSeek-V3 report §2.1.2).
  double bias_update_rate = 0.001;
  bool enabled() const { return num_experts > 0; }
};

/// Transformer dimensions of a model of one of four families:
///  - "llama": RMSNorm, rotary position embeddings (so an even head size), bias-free
///    projections, a SwiGLU feed-forward of width ffn_hidden and an LM head untied from the
///    token embedding;
///  - "gpt2": LayerNorm with bias, learned absolute position embeddings of seq_len positions,
///    attention projections with biases, a GELU MLP of width ffn_hidden with biases and an LM
///    head tied to the token embedding;
///  - "bert" (Devlin et al. 2019): an encoder of post-LayerNorm layers with gpt2's weights and
///    bidirectional attention, embeddings of tokens, max_position_embeddings positions and 2 token
///    types with a LayerNorm, and a sequence-classification head on the first token: the pooler
///    (d×d, tanh) and the classifier (d × num_labels), as transformers'
///    BertForSequenceClassification;
///  - "distilbert" (Sanh et al. 2019): bert without token types, its pooler a pre-classifier
///    (d×d, ReLU), as DistilBertForSequenceClassification.
struct ModelSpec {
  ModelFamily family = ModelFamily::Llama;
  int vocab_size = 0;
  int d_model = 0;
  int n_layers = 0;
  int n_heads = 0;
  /// Key/value heads (grouped-query attention, Ainslie et al. 2023; 1 = multi-query attention,
  /// Shazeer 2019): each serves n_heads / n_kv_heads query heads. 0 = n_heads (multi-head).
  int n_kv_heads = 0;
  int ffn_hidden = 0;  ///< width of the feed-forward hidden layer (SwiGLU or GELU MLP)
  int seq_len = 0;     ///< tokens per sequence
  Attention attention = Attention::Eager;
  MoeSpec moe;  ///< num_experts 0: every layer dense
  /// Rows of the position embedding of bert and distilbert (BERT-base: 512); 0 = seq_len.
  int max_position_embeddings = 0;
  int num_labels = 2;  ///< classes of an encoder's classification head
  /// A Hugging Face checkpoint folder an encoder starts from (config.json, model.safetensors);
  /// "" = initialised from training.seed. The runtime reads it; the simulator does not.
  std::string checkpoint;
  /// max_position_embeddings, or seq_len where it is 0.
  int positions() const { return max_position_embeddings > 0 ? max_position_embeddings : seq_len; }
  /// n_kv_heads, or n_heads where it is 0.
  int kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
};

/// How GPUs split the model and the batch. World size = dp * pp * tp, numbered as Megatron-LM
/// does: tensor-parallel index innermost, then data-parallel index, then pipeline rank, so GPU
/// g = (pipeline_rank * dp + dp_index) * tp + tp_index. A schedule rank is one tensor-parallel
/// group (tp GPUs that run the same actions on shards of each layer).
struct LayoutSpec {
  int dp = 1;  ///< data-parallel replicas
  int pp = 1;  ///< pipeline ranks per replica
  int tp = 1;  ///< tensor-parallel degree (Megatron-LM's column/row split)
  /// Context parallelism: each sequence split over cp GPUs, each holding seq_len/cp of its
  /// tokens (2 chunks of seq_len/(2·cp) under p2p and all_gather) and exchanging keys and values
  /// by cp_comm_type. GPUs are numbered tp innermost, then cp, then dp, then pp (Megatron-Core's
  /// order): GPU = ((pipeline_rank·dp + dp_index)·cp + cp_index)·tp + tp_index. Parameters are
  /// replicated over the cp GPUs, so gradients are reduced (and ZeRO shards) over dp·cp.
  int cp = 1;
  CpCommType cp_comm_type = CpCommType::P2p;
  /// Expert parallelism, folded as Megatron-Core's "MoE parallel folding" (Liu et al. 2025): the
  /// MoE layers re-partition a stage's dp·cp·tp GPUs as etp × ep × edp (expert-tensor index
  /// innermost, then expert-parallel index, then expert-data-parallel index, all in the order of
  /// the dense layers' GPU numbering g mod dp·cp·tp), edp = dp·cp·tp / (ep·etp).
  int ep = 1;            ///< expert-parallel degree: num_experts / ep experts per GPU
  int etp = 0;           ///< expert tensor parallelism; 0 = tp (Megatron-LM's default)
  int microbatches = 1;  ///< microbatches per step per replica
  /// Sequences per step over all replicas (Megatron-LM's --global-batch-size); 0 = not given.
  /// When given, microbatches = global_batch / (micro_batch_size · dp).
  int global_batch = 0;
  int micro_batch_size = 1;  ///< sequences per microbatch
  sched::ScheduleKind schedule = sched::ScheduleKind::OneFOneB;
  int virtual_stages = 1;  ///< model chunks per pipeline rank (interleaved 1F1B)
  sched::DpSync dp_sync = sched::DpSync::AllReduce;
  std::vector<int> stage_layers;   ///< layers per stage (pp * virtual_stages entries) or empty
  bool sequence_parallel = false;  ///< Korthikanti et al. 2022 sequence parallelism (tp > 1)
  /// Tensor-parallel collectives overlapped with the layer's GEMMs (Megatron-LM's
  /// --tp-comm-overlap, Transformer Engine userbuffers; needs sequence_parallel)
  bool tp_comm_overlap = false;
  int zero = 0;  ///< ZeRO stage 0..3 over the data-parallel group (3 = FSDP full sharding)
  /// ZeRO-3's gather granularity: per layer (DeepSpeed ZeRO-3, FSDP) or per stage
  sched::Zero3Gather zero3_gather = sched::Zero3Gather::Layer;
  /// Hybrid sharding (HSDP; torchtitan's data_parallel_shard_degree, Megatron-Core's dp /
  /// --num-distributed-optimizer-instances): the data-parallel replicas one ZeRO shard group
  /// spans, consecutive dp indices (replicas d with the same d / dp_shard). 0 = all dp. With
  /// 1 <= dp_shard < dp (dividing dp, zero >= 1) ZeRO shards over dp_shard·cp GPUs, gradients are
  /// reduce-scattered inside the shard group and the shard all-reduced across the dp / dp_shard
  /// groups; parameters are gathered inside the shard group.
  int dp_shard = 0;
  Recompute recompute = Recompute::None;
  bool overlap_grad_reduce = false;   ///< reduce gradient buckets while the backward runs
  double bucket_size = 0;             ///< bytes per gradient bucket; 0 = Megatron-LM's default
  bool overlap_param_gather = false;  ///< prefetch ZeRO parameter all-gathers under compute
  Offload offload = Offload::None;
  int expert_tp() const { return etp > 0 ? etp : tp; }
  /// The expert data-parallel group: the replicas of one expert shard, dp·cp·tp / (ep·etp).
  int expert_dp() const { return dp_cp() * tp / (ep * expert_tp()); }
  /// The GPUs of one tensor-parallel rank that hold the same parameters, dp·cp: the group that
  /// reduces gradients and over which ZeRO shards (Megatron-Core's data-parallel group with
  /// context parallelism; torchtitan's FSDP mesh dp_shard·cp).
  int dp_cp() const { return dp * cp; }
  /// True under hybrid sharding: 0 < dp_shard < dp.
  bool hybrid_shard() const { return dp_shard > 0 && dp_shard < dp; }
  /// The GPUs of one tensor-parallel rank over which ZeRO shards the model states: dp_shard·cp
  /// under hybrid sharding, else dp_cp().
  int zero_group() const { return hybrid_shard() ? dp_shard * cp : dp_cp(); }
  /// True where ZeRO-3 gathers per layer on a data-parallel group (zero 3, zero3_gather layer,
  /// dp·cp > 1): each pass gathers its layers, each microbatch's gradients are reduce-scattered.
  bool gathers_layers() const {
    return zero == 3 && zero3_gather == sched::Zero3Gather::Layer && dp_cp() > 1;
  }
  /// True where the gradients are reduced in buckets during the last backward
  /// (overlap_grad_reduce with dp·cp > 1), not by the ALLREDUCE or REDUCE_GRAD; never under
  /// gathers_layers, which reduces each layer's as its backward ends.
  bool gradient_buckets() const { return overlap_grad_reduce && dp_cp() > 1 && !gathers_layers(); }
};

struct TrainingSpec {
  int steps = 10;
  double lr = 3e-4;
  std::string optimizer = "adamw";
  std::uint64_t seed = 0;
  Precision precision = Precision::Fp32;
  /// Element type of the gradient buffers and of their data-parallel reduction. fp32 by default:
  /// Megatron-LM forces fp32 gradient accumulation and all-reduce under bf16
  /// (--accumulate-allreduce-grads-in-fp32) and NeMo's distributed Adam reduces in fp32 unless
  /// grad_sync_dtype says otherwise; bf16 stands for 16-bit gradients (Megatron's fp16 path,
  /// DeepSpeed, NeMo's grad_sync_dtype: bf16).
  Precision grad_precision = Precision::Fp32;
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  ///< scaling of the fp8 GEMM operands (precision fp8)
  /// Past amaxes per fp8 operand whose largest sets its scale under the delayed recipe
  /// (Megatron-LM's --fp8-amax-history-len, with --fp8-amax-compute-algo max; its default 1).
  int fp8_amax_history_len = 1;
  /// ZeRO's parameter all-gathers move the layers' linear weights in fp8 (precision fp8, zero >
  /// 0): Megatron-Core's --fp8-param-gather, torchtitan's float8.enable_fsdp_float8_all_gather.
  bool fp8_param_gather = false;
  int checkpoint_every = 0;  ///< steps between checkpoints; 0 = only at the end
  /// An encoder's tokenized classification set (scripts/tokenize_glue.py's train.safetensors and
  /// dev.safetensors): a folder under the data directory, or a path with a '/'.
  std::string dataset = "kjv-books";
  int warmup_steps = 0;  ///< steps of linear learning-rate warm-up from 0 to lr
  LrDecay lr_decay_style = LrDecay::Constant;
  int eval_every = 0;  ///< steps between an encoder's dev-split evaluations; 0 = at the end only
  /// Passes over an encoder's training split (transformers' num_train_epochs): > 0 makes the
  /// runtime train ⌈epochs · examples / global batch⌉ steps instead of `steps` and evaluate the
  /// dev split after each epoch (rt::with_epoch_steps); 0: `steps` counts.
  int epochs = 0;
};

/// One point-to-point link class: bandwidth in bytes/s per direction, latency in seconds.
struct LinkSpec {
  double bandwidth = 0;
  double latency = 0;
};

struct DeviceSpec {
  DeviceKind kind = DeviceKind::Cpu;
  /// Device description (models/devices/<name>.yaml, or a path to such a file): the kernel-level
  /// compute model times each operator from it. "" = time compute as FLOPs / (peak * efficiency).
  std::string model;
  std::optional<DeviceDescription> description;  ///< `model` loaded, when given
  double peak_flops = 0;                         ///< FLOP/s at the training precision
  double efficiency = 0.5;  ///< fraction of peak that a forward/backward reaches
  double memory = 0;        ///< bytes
  int cores = 1;            ///< cores SimGrid gives the host
  std::string profile;      ///< optional measured profile file ("" = none)
  LinkSpec host_link;       ///< device <-> host memory (PCIe); bandwidth 0 = none given
};

struct ClusterSpec {
  int nodes = 1;
  int devices_per_node = 1;
  int ranks_per_device = 1;  ///< ranks sharing one device (they contend for it)
  DeviceSpec device;
  LinkSpec intra_node;  ///< between devices of one node (NVLink, PCIe, loopback)
  LinkSpec inter_node;  ///< each node's link into the network
  /// Fat-tree only: nodes per leaf switch; there are as many spine switches (full bisection).
  int nodes_per_switch = 8;
  Topology topology = Topology::Star;  ///< inter-node network
};

struct RuntimeSpec {
  Backend backend = Backend::Gloo;
  RuntimeDevice device = RuntimeDevice::Cpu;
  double timeout_s = 60;  ///< seconds a rank waits for a peer before giving up
  int threads = 0;  ///< intra-op threads per rank; 0 = the rank's share of the machine's cores
  /// A LLaMA's memory-bound steps as fused kernels (StageModule::use_fused_kernels).
  bool fused_kernels = false;
  /// A single GPU rank's passes replayed from CUDA graphs (rt::PassGraphs).
  bool cuda_graphs = false;
};

struct Scenario {
  std::string source;  ///< file it came from
  std::string name;
  /// The optional keys the file (and --set) left out, in schema order: their values are the
  /// defaults (a section's keys only where the section is given). Filled by load_scenario.
  std::vector<std::string> defaulted;
  ModelSpec model;
  LayoutSpec layout;
  TrainingSpec training;
  ClusterSpec cluster;
  RuntimeSpec runtime;

  int world_size() const { return layout.dp * layout.cp * layout.pp * layout.tp; }
};

}  // namespace dtwin
