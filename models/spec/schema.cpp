#include "models/spec/schema.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <cstdint>
#include <type_traits>

namespace dtwin {
namespace {

/// The member that the chain of member pointers `ms` names inside `s` (s.*m1.*m2...).
template <typename S, typename... Ms>
auto& member(S& s, Ms... ms) {
  return (s.*....*ms);
}

template <typename T>
FieldValue to_field_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<long long>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return FieldValue(v);  // std::string, std::vector<int>
  }
}

template <typename T>
void from_field_value(const FieldValue& v, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    out = std::get<bool>(v);
  } else if constexpr (std::is_integral_v<T>) {
    out = static_cast<T>(std::get<long long>(v));
  } else if constexpr (std::is_same_v<T, double>) {
    out = std::get<double>(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = std::get<std::string>(v);
  } else {
    out = std::get<std::vector<int>>(v);
  }
}

/// A field bound to the Scenario member that `ms` names.
template <typename... Ms>
FieldSpec bind(FieldSpec f, Ms... ms) {
  f.get = [=](const Scenario& s) { return to_field_value(member(s, ms...)); };
  f.set = [=](Scenario& s, const FieldValue& v) { from_field_value(v, member(s, ms...)); };
  return f;
}

/// A Choice field bound to an enum member, its names from `table`.
template <typename E, std::size_t N, typename... Ms>
FieldSpec bind_enum(FieldSpec f, const NameTable<E, N>& table, Ms... ms) {
  f.kind = FieldKind::Choice;
  f.choices = table.names();
  f.get = [=, &table](const Scenario& s) {
    return FieldValue(std::string(table.name(member(s, ms...))));
  };
  f.set = [=, &table](Scenario& s, const FieldValue& v) {
    member(s, ms...) = *table.parse(std::get<std::string>(v));
  };
  return f;
}

/// A key of `kind` with its meaning and the names other tools give it.
FieldSpec field(std::string path, FieldKind kind, bool required, std::string meaning,
                std::string megatron = "", std::string torchtitan = "") {
  FieldSpec f;
  f.path = std::move(path);
  f.kind = kind;
  f.required = required;
  f.meaning = std::move(meaning);
  f.megatron = std::move(megatron);
  f.torchtitan = std::move(torchtitan);
  return f;
}

FieldSpec section(std::string path, bool required, std::string meaning) {
  return field(std::move(path), FieldKind::Section, required, std::move(meaning));
}

FieldSpec integer(std::string path, bool required, long long min, std::string meaning,
                  std::string megatron = "", std::string torchtitan = "") {
  FieldSpec f = field(std::move(path), FieldKind::Integer, required, std::move(meaning),
                      std::move(megatron), std::move(torchtitan));
  f.min = min;
  return f;
}

FieldSpec quantity(std::string path, bool required, Quantity q, bool positive, std::string meaning,
                   std::string megatron = "", std::string torchtitan = "") {
  FieldSpec f = field(std::move(path), FieldKind::Quantity, required, std::move(meaning),
                      std::move(megatron), std::move(torchtitan));
  f.quantity = q;
  f.positive = positive;
  return f;
}

FieldSpec flag(std::string path, std::string meaning, std::string megatron = "",
               std::string torchtitan = "") {
  FieldSpec f = field(std::move(path), FieldKind::Boolean, false, std::move(meaning),
                      std::move(megatron), std::move(torchtitan));
  f.choices = {"false", "true"};
  return f;
}

FieldSpec choice(std::string path, bool required, std::string meaning, std::string megatron = "",
                 std::string torchtitan = "") {
  return field(std::move(path), FieldKind::Choice, required, std::move(meaning),
               std::move(megatron), std::move(torchtitan));
}

FieldSpec text(std::string path, bool required, bool allow_empty, std::string meaning) {
  FieldSpec f = field(std::move(path), FieldKind::Text, required, std::move(meaning));
  f.allow_empty = allow_empty;
  return f;
}

/// `f` with its default said in words, where it is not a fixed value.
FieldSpec noted(FieldSpec f, std::string default_note) {
  f.default_note = std::move(default_note);
  return f;
}

/// `f`, required unless the key `other` is given, which then supplies `f` as `note` says.
FieldSpec unless(FieldSpec f, std::string other, std::string note) {
  f.required_unless = std::move(other);
  return noted(std::move(f), std::move(note));
}

/// `f` (optional), required where the integer key `other` of its section is at least `from`;
/// else its default is `note`.
FieldSpec required_if(FieldSpec f, std::string other, long long from, std::string note) {
  f.required = false;
  f.required_if = std::move(other);
  f.required_from = from;
  return noted(std::move(f), std::move(note));
}

FieldSpec with_max(FieldSpec f, long long max, std::string what) {
  f.max = max;
  f.what = std::move(what);
  return f;
}

FieldSpec with_quantity_range(FieldSpec f, double min, double max, std::string what) {
  f.quantity_min = min;
  f.quantity_max = max;
  f.what = std::move(what);
  return f;
}

/// The two keys of a link section under `path` (bandwidth and latency), bound to `link`.
template <typename... Ms>
void add_link(std::vector<FieldSpec>& fields, FieldSpec link_section, Ms... link) {
  const std::string path = link_section.path;
  fields.push_back(std::move(link_section));
  fields.push_back(
      bind(quantity(path + ".bandwidth", true, Quantity::Bandwidth, true, "bytes/s per direction"),
           link..., &LinkSpec::bandwidth));
  fields.push_back(
      bind(quantity(path + ".latency", true, Quantity::Latency, false, "seconds per message"),
           link..., &LinkSpec::latency));
}

std::vector<FieldSpec> make_fields() {
  using S = Scenario;
  using M = ModelSpec;
  using L = LayoutSpec;
  using T = TrainingSpec;
  using C = ClusterSpec;
  using D = DeviceSpec;
  using R = RuntimeSpec;
  std::vector<FieldSpec> f;
  f.push_back(bind(text("name", true, false,
                        "the scenario's name: default output folder out/<name>, plot titles"),
                   &S::name));

  f.push_back(section("model", true, "transformer dimensions of the model"));
  f.push_back(bind_enum(choice("model.family", true,
                               "llama (RMSNorm, rotary embeddings, SwiGLU, untied head), gpt2 "
                               "(LayerNorm, learned positions, GELU MLP, tied head), or the "
                               "encoders bert (post-LayerNorm, bidirectional, token types, "
                               "pooler and classifier) and distilbert (no token types)"),
                        kModelFamilyNames, &S::model, &M::family));
  f.push_back(bind(integer("model.vocab_size", true, 1, "tokens in the vocabulary", "--vocab-size",
                           "model.vocab_size"),
                   &S::model, &M::vocab_size));
  f.push_back(bind(integer("model.d_model", true, 1,
                           "hidden width; a multiple of n_heads (an even head size for llama)",
                           "--hidden-size", "model.dim"),
                   &S::model, &M::d_model));
  f.push_back(bind(
      integer("model.n_layers", true, 1, "transformer layers", "--num-layers", "model.n_layers"),
      &S::model, &M::n_layers));
  f.push_back(bind(integer("model.n_heads", true, 1, "attention heads", "--num-attention-heads",
                           "model.n_heads"),
                   &S::model, &M::n_heads));
  f.push_back(
      bind(noted(integer("model.n_kv_heads", false, 1,
                         "key/value heads (grouped-query attention; 1 = multi-query), "
                         "dividing n_heads; with tp > 1 a multiple of tp, or a divisor of "
                         "it (each head then replicated on tp / n_kv_heads ranks, which "
                         "Megatron-Core refuses)",
                         "--num-query-groups (with --group-query-attention)", "model.n_kv_heads"),
                 "n_heads (multi-head attention)"),
           &S::model, &M::n_kv_heads));
  f.push_back(bind(
      integer("model.ffn_hidden", true, 1,
              "width of the feed-forward hidden layer (SwiGLU or GELU MLP)", "--ffn-hidden-size"),
      &S::model, &M::ffn_hidden));
  f.push_back(bind(
      integer("model.seq_len", true, 1, "tokens per sequence", "--seq-length", "training.seq_len"),
      &S::model, &M::seq_len));
  f.push_back(bind_enum(noted(choice("model.attention", false,
                                     "eager (stores the a·s² scores) or flash (memory-efficient: "
                                     "no score tensors)",
                                     "--attention-backend"),
                              "flash on a gpu device, eager on a cpu"),
                        kAttentionNames, &S::model, &M::attention));

  f.push_back(bind(noted(integer("model.max_position_embeddings", false, 1,
                                 "rows of an encoder's position embedding (BERT-base: 512); at "
                                 "least seq_len; bert and distilbert only",
                                 "--max-position-embeddings"),
                         "seq_len"),
                   &S::model, &M::max_position_embeddings));
  f.push_back(bind(text("model.checkpoint", false, false,
                        "a Hugging Face checkpoint folder (config.json, model.safetensors or its "
                        "shards) the encoder starts from, its shapes those of the model keys; "
                        "bert and distilbert only; absent: initialised from training.seed"),
                   &S::model, &M::checkpoint));
  f.push_back(bind(integer("model.num_labels", false, 2,
                           "classes of an encoder's sequence-classification head; bert and "
                           "distilbert only"),
                   &S::model, &M::num_labels));

  f.push_back(section("model.moe", false,
                      "mixture-of-experts feed-forward (Megatron-Core MoE); absent = dense"));
  using E = MoeSpec;
  f.push_back(bind(integer("model.moe.num_experts", true, 1, "routed experts per MoE layer",
                           "--num-experts", "model.moe_args.num_experts"),
                   &S::model, &M::moe, &E::num_experts));
  f.push_back(bind(
      integer("model.moe.top_k", true, 1, "experts each token is routed to; at most num_experts",
              "--moe-router-topk", "model.moe_args.top_k"),
      &S::model, &M::moe, &E::top_k));
  f.push_back(bind(
      integer("model.moe.expert_ffn_hidden", true, 1, "hidden width of each routed expert's SwiGLU",
              "--moe-ffn-hidden-size", "model.moe_inter_dim"),
      &S::model, &M::moe, &E::expert_ffn_hidden));
  f.push_back(bind(noted(integer("model.moe.shared_expert_ffn_hidden", false, 0,
                                 "hidden width of the shared expert every token also passes "
                                 "(all shared experts together); 0 = none",
                                 "--moe-shared-expert-intermediate-size",
                                 "model.moe_args.num_shared_experts (times moe_inter_dim)"),
                         "0: no shared expert"),
                   &S::model, &M::moe, &E::shared_expert_ffn_hidden));
  f.push_back(
      bind(integer("model.moe.first_dense_layers", false, 0,
                   "the first k layers keep the dense model.ffn_hidden feed-forward, the "
                   "rest are MoE layers; fewer than n_layers",
                   "--moe-layer-freq (a pattern of k zeros, then ones)", "model.n_dense_layers"),
           &S::model, &M::moe, &E::first_dense_layers));
  f.push_back(bind(noted(quantity("model.moe.capacity_factor", false, Quantity::Count, true,
                                  "GShard's capacity factor: an expert takes at most "
                                  "capacity_factor · tokens · top_k / num_experts tokens, the rest "
                                  "are dropped",
                                  "--moe-expert-capacity-factor"),
                         "dropless (no capacity)"),
                   &S::model, &M::moe, &E::capacity_factor));
  f.push_back(bind(flag("model.moe.pad_to_capacity",
                        "with model.moe.capacity_factor: pad every expert's tokens to its capacity "
                        "(fixed all-to-all and expert GEMM sizes)",
                        "--moe-pad-expert-input-to-capacity"),
                   &S::model, &M::moe, &E::pad_to_capacity));
  f.push_back(bind(quantity("model.moe.load_imbalance", false, Quantity::Count, true,
                            "a planning factor >= 1: tokens the busiest expert-parallel rank "
                            "receives over the mean (1 = balanced routing); scales the expert "
                            "GEMMs and the all-to-alls, and a profile's passes (timed balanced)"),
                   &S::model, &M::moe, &E::load_imbalance));
  f.push_back(bind(quantity("model.moe.peak_load_imbalance", false, Quantity::Count, false,
                            "the busiest expert-parallel rank's copies over the mean in its "
                            "worst microbatch (all its MoE layers): the expert activations a "
                            "dropless rank holds at its memory peak (0 = load_imbalance); dtwin "
                            "run measures it (compare.json's peak_load_imbalance)"),
                   &S::model, &M::moe, &E::peak_load_imbalance));
  f.push_back(bind_enum(choice("model.moe.router", false,
                               "softmax top-k, or sigmoid top-k with an auxiliary-loss-free "
                               "expert bias (DeepSeek-V3)",
                               "--moe-router-score-function", "model.moe_args.score_func"),
                        kRouterNames, &S::model, &M::moe, &E::router));
  f.push_back(bind(
      with_quantity_range(quantity("model.moe.aux_loss_coeff", false, Quantity::Count, false,
                                   "α of the load-balancing auxiliary loss α·E·Σ f_i·P_i (Switch "
                                   "Transformer eq. 4; 0.01 there, DeepSeek-V3's sigmoid router "
                                   "uses 0.0001); its gradient joins the backward, the reported "
                                   "loss leaves it out",
                                   "--moe-aux-loss-coeff"),
                          0, 1, "a coefficient from 0 to 1"),
      &S::model, &M::moe, &E::aux_loss_coeff));
  f.push_back(bind(
      with_quantity_range(quantity("model.moe.bias_update_rate", false, Quantity::Count, false,
                                   "γ of the sigmoid router's expert bias, stepped by γ·sign(mean "
                                   "load − the expert's load) after each step (DeepSeek-V3)",
                                   "--moe-router-bias-update-rate"),
                          0, 1, "a rate from 0 to 1"),
      &S::model, &M::moe, &E::bias_update_rate));

  f.push_back(section("layout", true,
                      "how ranks split the model and the batch: world size = dp·cp·pp·tp ranks"));
  f.push_back(bind(integer("layout.dp", true, 1, "data-parallel replicas", "",
                           "parallelism.data_parallel_replicate_degree"),
                   &S::layout, &L::dp));
  f.push_back(
      bind(integer("layout.pp", false, 1, "pipeline stages per replica (ranks)",
                   "--pipeline-model-parallel-size", "parallelism.pipeline_parallel_degree"),
           &S::layout, &L::pp));
  f.push_back(
      bind(integer("layout.tp", false, 1, "tensor-parallel degree (Megatron-LM's column/row split)",
                   "--tensor-model-parallel-size", "parallelism.tensor_parallel_degree"),
           &S::layout, &L::tp));
  f.push_back(bind(integer("layout.cp", false, 1,
                           "context-parallel degree: each sequence split over cp GPUs (tp "
                           "innermost, then cp, then dp, then pp); needs flash attention",
                           "--context-parallel-size", "parallelism.context_parallel_degree"),
                   &S::layout, &L::cp));
  f.push_back(bind_enum(choice("layout.cp_comm_type", false,
                               "how a context-parallel group exchanges keys and values: p2p ring "
                               "overlapped with attention, all_gather, or a2a (DeepSpeed-Ulysses)",
                               "--cp-comm-type (allgather for all_gather)",
                               "parallelism.context_parallel_rotate_method"),
                        kCpCommTypeNames, &S::layout, &L::cp_comm_type));
  f.push_back(bind(integer("layout.ep", false, 1,
                           "expert-parallel degree, dividing model.moe.num_experts; ep · etp "
                           "divides dp · cp · tp (MoE parallel folding)",
                           "--expert-model-parallel-size", "parallelism.expert_parallel_degree"),
                   &S::layout, &L::ep));
  f.push_back(bind(
      noted(integer("layout.etp", false, 1,
                    "expert tensor-parallel degree: each expert's width split over "
                    "etp GPUs",
                    "--expert-tensor-parallel-size", "parallelism.expert_tensor_parallel_degree"),
            "layout.tp (Megatron-LM's default)"),
      &S::layout, &L::etp));
  f.push_back(bind(integer("layout.global_batch", false, 1,
                           "sequences per step over all replicas; sets microbatches to "
                           "global_batch / (micro_batch_size · dp)",
                           "--global-batch-size", "training.global_batch_size"),
                   &S::layout, &L::global_batch));
  f.push_back(bind(unless(integer("layout.microbatches", true, 1,
                                  "microbatches per step per replica (global batch / (dp · "
                                  "micro_batch_size))"),
                          "layout.global_batch", "global_batch / (micro_batch_size · dp)"),
                   &S::layout, &L::microbatches));
  f.push_back(bind(
      integer("layout.micro_batch_size", true, 1, "sequences per microbatch", "--micro-batch-size"),
      &S::layout, &L::micro_batch_size));
  f.push_back(bind_enum(required_if(choice("layout.schedule", true, "the pipeline schedule", "",
                                           "parallelism.pipeline_parallel_schedule"),
                                    "layout.pp", 2, "1f1b (one stage: no pipeline)"),
                        sched::kScheduleKindNames, &S::layout, &L::schedule));
  f.push_back(
      bind(integer("layout.virtual_stages", false, 1,
                   "model chunks per pipeline rank (interleaved-1f1b; 2 for zb-v and dualpipe-v)",
                   "--virtual-pipeline-model-parallel-size"),
           &S::layout, &L::virtual_stages));
  f.push_back(bind_enum(choice("layout.dp_sync", false,
                               "how replicas synchronise after the step: all-reduce the "
                               "gradients, gather-scatter them through replica 0, or average "
                               "the weights"),
                        sched::kDpSyncNames, &S::layout, &L::dp_sync));
  {
    FieldSpec stage_layers =
        noted(field("layout.stage_layers", FieldKind::IntList, false,
                    "layers per stage, pp · virtual_stages entries summing to n_layers; 0 only "
                    "for the first stage (the embedding alone) or the last (the head alone)",
                    "", "parallelism.pipeline_parallel_split_points (as split points)"),
              "equal split: n_layers / (pp · virtual_stages) each");
    stage_layers.min = 0;
    f.push_back(bind(stage_layers, &S::layout, &L::stage_layers));
  }
  f.push_back(bind(flag("layout.sequence_parallel",
                        "Megatron-LM sequence parallelism (Korthikanti et al. 2022); needs tp > 1",
                        "--sequence-parallel"),
                   &S::layout, &L::sequence_parallel));
  f.push_back(bind(flag("layout.tp_comm_overlap",
                        "tensor-parallel collectives overlapped with the layer's GEMMs; needs "
                        "sequence_parallel",
                        "--tp-comm-overlap", "parallelism.enable_async_tensor_parallel"),
                   &S::layout, &L::tp_comm_overlap));
  f.push_back(bind(with_max(integer("layout.zero", false, 0,
                                    "ZeRO stage over the data-parallel group: 1 optimizer "
                                    "states, 2 + gradients, 3 + parameters (FSDP)",
                                    "--use-distributed-optimizer (stage 1)",
                                    "parallelism.data_parallel_shard_degree (stage 3)"),
                            3, "0, 1, 2 or 3"),
                   &S::layout, &L::zero));
  f.push_back(bind_enum(
      choice("layout.zero3_gather", false,
             "with zero 3: gather each layer just before each pass and reduce-scatter every "
             "microbatch's gradients (DeepSpeed ZeRO-3, FSDP), or the whole stage before the "
             "first forward and backward, held across microbatches (dtwin's runtime)",
             "", "parallelism.fsdp_reshard_after_forward (never: stage, under pipelining)"),
      sched::kZero3GatherNames, &S::layout, &L::zero3_gather));
  f.push_back(bind(
      noted(integer("layout.dp_shard", false, 0,
                    "hybrid sharding (HSDP): the replicas one ZeRO shard group spans, consecutive "
                    "in the order tp, cp, dp, pp; with 1 <= dp_shard < dp (dividing dp, zero > 0) "
                    "ZeRO shards over dp_shard·cp GPUs, gradients are reduce-scattered inside the "
                    "group and the shard all-reduced across the dp / dp_shard groups, parameters "
                    "gathered inside the group; simulated only",
                    "--num-distributed-optimizer-instances (= dp / dp_shard)",
                    "parallelism.data_parallel_shard_degree"),
            "0: all of dp (ZeRO over the whole data-parallel group)"),
      &S::layout, &L::dp_shard));
  f.push_back(bind_enum(
      choice("layout.recompute", false, "activation recomputation (Korthikanti et al. 2022, §4)",
             "--recompute-granularity", "activation_checkpoint.mode"),
      kRecomputeNames, &S::layout, &L::recompute));
  f.push_back(bind(flag("layout.overlap_grad_reduce",
                        "reduce gradient buckets while the backward runs", "--overlap-grad-reduce"),
                   &S::layout, &L::overlap_grad_reduce));
  f.push_back(bind(noted(quantity("layout.bucket_size", false, Quantity::Bytes, true,
                                  "bytes per gradient bucket", "--ddp-bucket-size (in parameters)"),
                         "Megatron-LM's: max(4e7, 1e6·dp·cp) parameters"),
                   &S::layout, &L::bucket_size));
  f.push_back(bind(flag("layout.overlap_param_gather",
                        "prefetch ZeRO parameter all-gathers under compute; needs zero > 0",
                        "--overlap-param-gather"),
                   &S::layout, &L::overlap_param_gather));
  f.push_back(bind_enum(choice("layout.offload", false,
                               "ZeRO-Offload placement of model states in host memory, over "
                               "cluster.device.host_link",
                               "--optimizer-cpu-offload"),
                        kOffloadNames, &S::layout, &L::offload));

  f.push_back(section("training", false, "optimisation"));
  f.push_back(
      bind(integer("training.steps", false, 1, "training steps", "--train-iters", "training.steps"),
           &S::training, &T::steps));
  f.push_back(bind(quantity("training.lr", false, Quantity::Count, true, "learning rate", "--lr",
                            "optimizer.lr"),
                   &S::training, &T::lr));
  {
    FieldSpec optimizer =
        choice("training.optimizer", false, "the optimizer", "--optimizer", "optimizer.name");
    optimizer.choices = {"adamw"};
    f.push_back(bind(optimizer, &S::training, &T::optimizer));
  }
  f.push_back(bind(with_max(integer("training.seed", false, 0,
                                    "seed of parameter initialisation and batch order", "--seed",
                                    "training.seed"),
                            LLONG_MAX, ""),
                   &S::training, &T::seed));
  f.push_back(
      bind_enum(noted(choice("training.precision", false,
                             "element type of weights and activations; fp8: bf16 with the "
                             "layers' linear GEMMs in fp8",
                             "--bf16 (--fp8-format hybrid)", "training.mixed_precision_param"),
                      "bf16 on a gpu device, fp32 on a cpu"),
                kPrecisionNames, &S::training, &T::precision));
  f.push_back(bind_enum(
      choice("training.grad_precision", false,
             "element type of gradients and their reduction (fp32 or bf16); fp32 when "
             "precision is fp32",
             "--accumulate-allreduce-grads-in-fp32 (fp32)", "training.mixed_precision_reduce"),
      kPrecisionNames, &S::training, &T::grad_precision));
  f.push_back(bind_enum(choice("training.fp8_recipe", false,
                               "scaling of fp8 GEMM operands (precision fp8): delayed, tensorwise "
                               "(current), blockwise (1x128/128x128), mxfp8",
                               "--fp8-recipe", "float8.recipe_name"),
                        kFp8RecipeNames, &S::training, &T::fp8_recipe));
  f.push_back(bind(integer("training.fp8_amax_history_len", false, 1,
                           "past amaxes per fp8 GEMM operand whose largest sets its scale under "
                           "fp8_recipe delayed (1: the previous call's)",
                           "--fp8-amax-history-len", ""),
                   &S::training, &T::fp8_amax_history_len));
  f.push_back(bind(flag("training.fp8_param_gather",
                        "ZeRO parameter all-gathers move the layers' linear weights in fp8 "
                        "(1 byte and its scale); needs precision fp8 and zero > 0",
                        "--fp8-param-gather", "float8.enable_fsdp_float8_all_gather"),
                   &S::training, &T::fp8_param_gather));
  f.push_back(bind(integer("training.checkpoint_every", false, 0,
                           "steps between checkpoints; 0 = only at the end", "--save-interval",
                           "checkpoint.interval"),
                   &S::training, &T::checkpoint_every));
  f.push_back(bind(integer("training.warmup_steps", false, 0,
                           "steps of linear learning-rate warm-up from 0 to training.lr (lr · "
                           "step / warmup_steps at step 0, 1, ...)",
                           "--lr-warmup-iters", "lr_scheduler.warmup_steps"),
                   &S::training, &T::warmup_steps));
  f.push_back(bind_enum(choice("training.lr_decay_style", false,
                               "the learning rate after the warm-up: constant, or linear to 0 at "
                               "the last step (transformers' get_linear_schedule_with_warmup)",
                               "--lr-decay-style", "lr_scheduler.decay_type"),
                        kLrDecayNames, &S::training, &T::lr_decay_style));
  f.push_back(bind(text("training.dataset", false, false,
                        "an encoder's tokenized classification set (train.safetensors and "
                        "dev.safetensors of scripts/tokenize_glue.py): a folder under the data "
                        "directory (--data-dir), or a path with a '/'; bert and distilbert only"),
                   &S::training, &T::dataset));
  f.push_back(bind(integer("training.eval_every", false, 0,
                           "steps between an encoder's evaluations on the dev split (accuracy, "
                           "F1); 0 = after the last step only",
                           "--eval-interval", "validation.freq"),
                   &S::training, &T::eval_every));
  f.push_back(bind(integer("training.epochs", false, 0,
                           "passes over an encoder's training split: the runtime trains "
                           "ceil(epochs x examples / global batch) steps instead of "
                           "training.steps and evaluates the dev split after each epoch "
                           "(transformers' num_train_epochs); 0 = training.steps counts"),
                   &S::training, &T::epochs));

  f.push_back(section("cluster", true,
                      "hardware: nodes · devices_per_node · ranks_per_device = the world size"));
  f.push_back(bind(integer("cluster.nodes", true, 1, "nodes"), &S::cluster, &C::nodes));
  f.push_back(bind(integer("cluster.devices_per_node", true, 1, "devices (GPUs) per node"),
                   &S::cluster, &C::devices_per_node));
  f.push_back(bind(integer("cluster.ranks_per_device", false, 1,
                           "ranks sharing one device (they contend for it)"),
                   &S::cluster, &C::ranks_per_device));
  f.push_back(section("cluster.device", true, "one device"));
  f.push_back(bind_enum(choice("cluster.device.kind", false, "what the simulated hosts stand for"),
                        kDeviceKindNames, &S::cluster, &C::device, &D::kind));
  f.push_back(bind(noted(text("cluster.device.model", false, false,
                              "device description: a name of models/devices/ (a100-80gb-sxm, "
                              "h100-sxm, h800-sxm, h200-sxm, b200) or a path to such a file; "
                              "times compute by kernels"),
                         "none: compute is FLOPs / (peak_flops · efficiency)"),
                   &S::cluster, &C::device, &D::model));
  f.push_back(bind(unless(quantity("cluster.device.peak_flops", true, Quantity::FlopRate, true,
                                   "FLOP/s at the training precision"),
                          "cluster.device.model", "its peak at training.precision"),
                   &S::cluster, &C::device, &D::peak_flops));
  f.push_back(
      bind(with_quantity_range(quantity("cluster.device.efficiency", false, Quantity::Count, true,
                                        "fraction of peak a forward/backward reaches "
                                        "(without a device description)"),
                               0.01, 1, "a fraction of peak from 0.01 to 1"),
           &S::cluster, &C::device, &D::efficiency));
  f.push_back(bind(unless(quantity("cluster.device.memory", true, Quantity::Bytes, true,
                                   "bytes of device memory"),
                          "cluster.device.model", "its memory"),
                   &S::cluster, &C::device, &D::memory));
  f.push_back(bind(integer("cluster.device.cores", false, 1, "cores SimGrid gives the host"),
                   &S::cluster, &C::device, &D::cores));
  f.push_back(bind(text("cluster.device.profile", false, true,
                        "a measured profile file (dtwin profile); \"\" = none"),
                   &S::cluster, &C::device, &D::profile));
  add_link(f,
           section("cluster.device.host_link", false,
                   "device <-> host memory (PCIe), for layout.offload"),
           &S::cluster, &C::device, &D::host_link);
  add_link(
      f,
      section("cluster.intra_node", true, "between devices of one node (NVLink, PCIe, loopback)"),
      &S::cluster, &C::intra_node);
  add_link(f,
           required_if(section("cluster.inter_node", true, "each node's link into the network"),
                       "cluster.nodes", 2, "unused with one node"),
           &S::cluster, &C::inter_node);
  f.push_back(bind_enum(choice("cluster.topology", false, "the simulated inter-node network"),
                        kTopologyNames, &S::cluster, &C::topology));
  f.push_back(bind(integer("cluster.nodes_per_switch", false, 1,
                           "fat-tree only: nodes per leaf switch (as many spine switches)"),
                   &S::cluster, &C::nodes_per_switch));

  f.push_back(section("runtime", false, "real runs (dtwin train, dtwin run)"));
  f.push_back(
      bind_enum(choice("runtime.backend", false, "the c10d backend", "--distributed-backend"),
                kBackendNames, &S::runtime, &R::backend));
  f.push_back(bind_enum(choice("runtime.device", false, "where the runtime keeps its tensors"),
                        kRuntimeDeviceNames, &S::runtime, &R::device));
  f.push_back(bind(quantity("runtime.timeout_s", false, Quantity::Count, true,
                            "seconds a rank waits for a peer before giving up",
                            "--distributed-timeout-minutes (minutes)", "comm.init_timeout_seconds"),
                   &S::runtime, &R::timeout_s));
  f.push_back(bind(integer("runtime.threads", false, 0,
                           "intra-op threads per rank; 0 = the rank's share of the cores"),
                   &S::runtime, &R::threads));
  f.push_back(bind(flag("runtime.fused_kernels",
                        "a LLaMA's RMSNorm, rotary embeddings, SwiGLU and LM-head cross-entropy "
                        "each one kernel per pass (ATen's fused RMSNorm, dtwin's CUDA kernels)",
                        "--apply-rope-fusion --bias-swiglu-fusion --cross-entropy-loss-fusion"),
                   &S::runtime, &R::fused_kernels));
  f.push_back(bind(flag("runtime.cuda_graphs",
                        "one GPU rank's forward and backward captured once in CUDA graphs and "
                        "replayed (LLaMA, one stage, 1f1b)",
                        "--enable-cuda-graph"),
                   &S::runtime, &R::cuda_graphs));
  return f;
}

}  // namespace

std::string FieldSpec::parent() const {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string FieldSpec::name() const {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

const std::vector<FieldSpec>& scenario_fields() {
  static const std::vector<FieldSpec> fields = make_fields();
  return fields;
}

const FieldSpec* find_field(std::string_view path) {
  for (const FieldSpec& f : scenario_fields())
    if (f.path == path) return &f;
  return nullptr;
}

std::vector<const FieldSpec*> section_fields(std::string_view path) {
  std::vector<const FieldSpec*> fields;
  for (const FieldSpec& f : scenario_fields())
    if (f.parent() == path) fields.push_back(&f);
  return fields;
}

std::string render_value(const FieldValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<V, std::vector<int>>) {
          return fmt::format("[{}]", fmt::join(v, ", "));
        } else {
          return fmt::format("{}", v);
        }
      },
      value);
}

std::string expected_text(const FieldSpec& field) {
  switch (field.kind) {
    case FieldKind::Section:
      return "a map";
    case FieldKind::Integer:
      return field.min > 0 ? "a positive integer" : "a non-negative integer";
    case FieldKind::Quantity:
      return quantity_description(field.quantity);
    case FieldKind::Boolean:
    case FieldKind::Choice:
      return fmt::format("one of {}", fmt::join(field.choices, ", "));
    case FieldKind::Text:
      return field.allow_empty ? "a string" : "a non-empty string";
    case FieldKind::IntList:
      return field.min > 0 ? "a list of positive integers" : "a list of integers >= 0";
  }
  return "";
}

std::string range_error(const FieldSpec& field, const FieldValue& value) {
  switch (field.kind) {
    case FieldKind::Integer: {
      const long long v = std::get<long long>(value);
      const long long max = field.max > 0 ? field.max : INT_MAX;
      if (v >= field.min && v <= max) return "";
      return !field.what.empty() && v >= field.min ? field.what : expected_text(field);
    }
    case FieldKind::Quantity: {
      const double v = std::get<double>(value);
      if (field.positive ? !(v > 0) : !(v >= 0))
        return quantity_bound(field.quantity, field.positive);
      if ((field.quantity_max > 0 && v > field.quantity_max) || v < field.quantity_min)
        return field.what;
      const PlainRange physical = physical_range(field.quantity);
      if ((v != 0 && v < physical.min) || (physical.max > 0 && v > physical.max))
        return physical_bound(field.quantity);
      return "";
    }
    case FieldKind::Choice: {
      const std::string& v = std::get<std::string>(value);
      for (const auto& c : field.choices)
        if (c == v) return "";
      return expected_text(field);
    }
    case FieldKind::Text:
      return !field.allow_empty && std::get<std::string>(value).empty() ? expected_text(field) : "";
    case FieldKind::IntList:
      for (int v : std::get<std::vector<int>>(value))
        if (v < field.min) return expected_text(field);
      return "";
    case FieldKind::Section:
    case FieldKind::Boolean:
      return "";
  }
  return "";
}

}  // namespace dtwin
