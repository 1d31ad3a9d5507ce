// One pipeline stage of a LLaMA model: an optional token embedding, a run of consecutive decoder
// layers, and optionally the final RMSNorm, the LM head and the cross-entropy loss. A stage with
// layer 0 onwards, all n_layers layers, the embedding and the head is the whole model.
//
// Parameters are registered under their global names, the same whatever the split:
//   embed.weight [V, d]                                   (stage with the embedding)
//   layers.<i>.attn_norm.weight [d], layers.<i>.mlp_norm.weight [d]
//   layers.<i>.attn.{wq,wo}.weight [d, d], layers.<i>.attn.{wk,wv}.weight [kv·hd, d]
//   layers.<i>.mlp.{w1,w3}.weight [f, d], layers.<i>.mlp.w2.weight [d, f]
//   in a MoE layer (model.moe, from layer first_dense_layers on) instead of mlp.{w1,w2,w3}:
//   layers.<i>.mlp.router.weight [E, d], layers.<i>.mlp.experts.{w1,w3} [E, fe, d],
//   layers.<i>.mlp.experts.w2 [E, d, fe], layers.<i>.mlp.shared.{w1,w2,w3}.weight (shared expert)
//   norm.weight [d], head.weight [V, d]                   (stage with the head)
// with <i> the global layer index, and initialised from them (models/nn/param_init.hpp), so any
// split holds exactly the values of the single-stage model with the same seed.
//
// With a tensor-parallel group of t > 1 members (Megatron-LM, Shoeybi et al. 2019) the module
// holds one member's shards under the same names: the embedding's and head's rows [V/t, d]
// (vocabulary-parallel lookup and cross-entropy), the member's h/t query heads [d/t, d], kv/t
// key/value heads [kv·hd/t, d] and wo [d, d/t], and w1/w3 [f/t, d], w2 [d, f/t]; the norm weights
// whole on every member (models/nn/param_init.hpp's tensor_parallel_dim). Under sequence
// parallelism the hidden states between stages are the member's sequence shard [b, s/t, d].
//
// The q/k/v/o, w1/w2/w3 and head weights are SplitLinear layers: a backward run under a
// StashGuard (models/nn/split_linear.hpp) defers their weight gradients to the stash (I), and
// WeightGradStash::apply() computes them later (W). The norm and embedding weights get their
// gradients during the backward either way. All of the stage's split layers share one StashSlot
// (stash_slot()).
//
// The parameters have the constructor's dtype (the master weights); the stage computes in its
// compute dtype (training.precision): the embedding's output and the incoming hidden states are
// cast to it, the norms and split layers compute in their input's dtype with cast copies of
// their weights, and the logits and the loss are fp32. bf16 compute with fp32 parameters is
// mixed-precision training with fp32 master weights and optimizer state (Micikevicius et al.
// 2018), the weight gradients cast to fp32 as they accumulate.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/moduledict.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "models/nn/bert.hpp"
#include "models/nn/decoder_layer.hpp"
#include "models/nn/split_linear.hpp"
#include "models/spec/scenario.hpp"
#include "models/spec/stage_partition.hpp"

namespace dtwin::nn {

/// The torch dtype activations are stored in at `precision`: kBFloat16 for bf16 and fp8 (whose
/// fp8 is the operand type of the layers' GEMMs), kFloat32 for fp32.
inline torch::ScalarType dtype_of(Precision precision) {
  return storage_precision(precision) == Precision::Bf16 ? torch::kBFloat16 : torch::kFloat32;
}

class StageModule : public torch::nn::Module {
 public:
  /// RMSNorm epsilon and RoPE base of the LLaMA family.
  static constexpr double kNormEps = 1e-5;
  static constexpr double kRopeBase = 10000.0;

  /// An encoder (family bert or distilbert) is one stage of every layer with the embedding and
  /// the head (EncoderClassifier, transformers' default dropouts, init_encoder from `seed`),
  /// without tensor, expert or context parallelism or recomputation: anything else throws
  /// std::invalid_argument.
  /// Builds layers [first_layer, first_layer + num_layers) of the model `spec` (family "llama"),
  /// with the token embedding when `has_embedding` and the final norm and LM head when `has_head`,
  /// initialised from `seed`; parameters live on `device` with `dtype` (values are drawn in fp32
  /// on the CPU and converted). `recompute` selective recomputes each layer's attention core in
  /// the backward, full each whole layer from its input (models/nn/recompute.hpp). Throws
  /// std::invalid_argument for another family, d_model not a multiple of n_heads, n_kv_heads not
  /// dividing n_heads, an odd head size
  /// or a layer range outside [0, n_layers). `tp` (size 1: none) makes it member tp.rank's
  /// shards; throws std::invalid_argument unless tp.size divides n_heads, n_kv_heads, ffn_hidden
  /// and vocab_size, and under sequence parallelism seq_len. `ep` (size 1: none) makes it hold
  /// member ep.rank's experts of each MoE layer; throws std::invalid_argument unless the model
  /// has experts that ep.size divides. `cp` (size 1: none) makes it member cp.rank of a
  /// context-parallel group: its inputs and targets are the member's tokens of each sequence
  /// ([b, s/cp], context_parallel_shard), its rotary positions theirs and its attention ring
  /// attention; throws std::invalid_argument unless 2·cp.size divides seq_len.
  StageModule(const ModelSpec& spec, int first_layer, int num_layers, bool has_embedding,
              bool has_head, std::uint64_t seed, torch::Device device = torch::kCPU,
              torch::ScalarType dtype = torch::kFloat32, Recompute recompute = Recompute::None,
              TensorParallelGroup tp = {}, std::optional<torch::ScalarType> compute = {},
              ExpertParallelGroup ep = {}, ContextParallelGroup cp = {});
  /// The stage `stage` of the scenario's StagePartition: scenario.model,
  /// scenario.training.seed and scenario.layout.recompute, computing at
  /// scenario.training.precision (fp8: use_fp8 with its recipe and amax history), with
  /// use_fused_kernels under scenario.runtime.fused_kernels, as member
  /// `tp` of its tensor-parallel group. The device and
  /// the parameters' dtype are the caller's choice (runtime.device is not read here).
  StageModule(const Scenario& scenario, const StageLayers& stage,
              torch::Device device = torch::kCPU, torch::ScalarType dtype = torch::kFloat32,
              TensorParallelGroup tp = {}, ExpertParallelGroup ep = {},
              ContextParallelGroup cp = {});

  /// Makes every split linear layer of the stage's decoder layers (attention and feed-forward;
  /// not the LM head, as in Transformer Engine's recipes) multiply in fp8, each with its own
  /// scaling state (fp8_linear). Throws std::invalid_argument for an encoder or for a recipe
  /// other than delayed or tensorwise (Fp8Scaling).
  void use_fp8(Fp8Recipe recipe, std::int64_t amax_history_len);
  /// Makes the stage's RMSNorms, rotary embeddings and SwiGLU products fused kernels and, on a
  /// stage with the head and without tensor parallelism, its head and cross-entropy one
  /// fused_linear_cross_entropy, whose weight gradient no stash defers (models/nn/fused_ops.hpp).
  /// The values are those of the composite operators up to rounding. Throws
  /// std::invalid_argument for an encoder.
  void use_fused_kernels();

  /// The stage's forward. An encoder (bert, distilbert; the whole model in one stage) takes the
  /// classification inputs [b, 3, s] (ids, token types, attention mask; runtime/data/
  /// training_data.hpp) and int64 labels [b], and returns the mean cross-entropy of its fp32
  /// logits. A decoder stage:
  ///  - input: int64 token ids [b, s] on a stage with the embedding, else the previous stage's
  ///    hidden states [b, s, d] ([b, s/t, d] under sequence parallelism; floating point, usually
  ///    requires_grad for the backward);
  ///  - targets: int64 next-token ids [b, s], required on a stage with the head, else ignored.
  /// Returns the hidden states [b, s, d] ([b, s/t, d] under sequence parallelism), or on a stage
  /// with the head the scalar mean cross-entropy over all b·s targets (logits in fp32), the
  /// same on every tensor-parallel member. Under context parallelism s is the member's s/cp
  /// tokens (and the loss their mean: the members' mean is the sequence's).
  torch::Tensor forward(const torch::Tensor& input, const torch::Tensor& targets = {});

  /// An encoder's logits [b, num_labels] (fp32) for classification inputs [b, 3, s]; throws
  /// std::logic_error on a decoder stage.
  torch::Tensor classify(const torch::Tensor& input);
  /// An encoder's module (null on a decoder stage): a Hugging Face checkpoint loads into it.
  EncoderClassifier& encoder() { return encoder_; }

  const ModelSpec& spec() const { return spec_; }
  int first_layer() const { return first_layer_; }
  int num_layers() const { return num_layers_; }
  bool has_embedding() const { return has_embedding_; }
  bool has_head() const { return has_head_; }
  const TensorParallelGroup& tensor_parallel() const { return tp_; }
  /// The expert-parallel group; its all-to-alls count into tensor_parallel()'s collective
  /// counters, the communication inside the stage's passes.
  const ExpertParallelGroup& expert_parallel() const { return ep_; }
  /// The context-parallel group; its ring's waits count into tensor_parallel()'s collective
  /// counters, like the expert-parallel all-to-alls.
  const ContextParallelGroup& context_parallel() const { return cp_; }
  /// The routed experts' parameters (`experts` true; expert_parallel_dim), which each member of
  /// the expert-parallel group holds for its own experts and which are reduced over the expert
  /// data-parallel group, or all the others (false), reduced over the data-parallel group.
  std::vector<torch::Tensor> expert_parameters(bool experts = true) const;
  /// The dtype of the hidden states and of the split layers' products (the constructor's
  /// `compute`, by default the parameters' dtype).
  torch::ScalarType compute_dtype() const { return compute_; }
  /// The slot whose active stash defers the stage's split-layer weight gradients (StashGuard).
  StashSlot& stash_slot() { return *slot_; }
  /// The parameters every tensor-parallel member holds whole (the norm weights). Under sequence
  /// parallelism each member's gradient of them covers its sequence shard only, so the group
  /// must sum those gradients before the optimizer step (Korthikanti et al. 2022 §4.2.2).
  std::vector<torch::Tensor> replicated_parameters() const;
  /// The stage's MoE feed-forwards by global layer index (none for a dense model).
  std::map<int, MoeFeedForward> moe_layers() const;
  /// Sets the factor of every MoE layer's auxiliary-loss gradient beside α: the factor the
  /// caller's backward gives the stage's loss (1/microbatches), so that both losses are averaged
  /// alike. 1 until set.
  void set_aux_loss_scale(double scale);

 private:
  ModelSpec spec_;
  int first_layer_;
  int num_layers_;
  bool has_embedding_;
  bool has_head_;
  bool fused_head_ = false;  ///< head and cross-entropy by fused_linear_cross_entropy
  Recompute recompute_;
  TensorParallelGroup tp_;
  ExpertParallelGroup ep_;
  ContextParallelGroup cp_;
  torch::ScalarType compute_;
  std::shared_ptr<StashSlot> slot_ = std::make_shared<StashSlot>();
  TokenEmbedding embed_{nullptr};
  torch::nn::ModuleDict layer_dict_{nullptr};
  std::vector<DecoderLayer> layers_;
  RMSNorm norm_{nullptr};
  SplitLinear head_{nullptr};
  EncoderClassifier encoder_{nullptr};
};

}  // namespace dtwin::nn
