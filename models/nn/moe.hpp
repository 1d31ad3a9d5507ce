// A mixture-of-experts feed-forward (model.moe) on one rank: the router, the load-balancing
// auxiliary loss, the token permutation to expert order and back, the routed experts as SwiGLU
// FFNs computed group by group over the permuted tokens, and the shared expert.
//
// Shapes: T = tokens entering the layer (b·s), d = d_model, E = num_experts, k = top_k,
// fe = expert_ffn_hidden, fs = shared_expert_ffn_hidden; N = routed token copies kept (T·k when
// dropless).
//
// Routing (Megatron-Core's TopKRouter; DeepSeek-V3 report §2.1.2 for the sigmoid router): the
// logits x·Wᵀ [T, E] are computed in fp32.
//  - softmax: each token's k largest logits are its experts, weighted by the softmax over those
//    k logits (Mixtral's renormalised top-k);
//  - sigmoid: scores s = sigmoid(logits); the experts are the k largest s + b, with b the expert
//    bias (a buffer, not trained by gradients: after each step b_i += γ·sign(mean load − load_i)
//    over the step's tokens, γ = model.moe.bias_update_rate), weighted by s / Σ s over the k.
// With a capacity factor c (GShard, Lepikhin et al. 2020) each expert takes at most
// C = ceil(c·T·k/E) copies of the layer's T tokens, those of the largest routing weights
// (Megatron-Core's "probs" drop policy); the rest are dropped (they add nothing; the residual
// carries the token). Dropless by default. With pad_to_capacity every expert's input is padded
// with zero rows to C (their outputs, zero, are dropped): fixed sizes for the all-to-alls and
// the expert GEMMs.
//
// Auxiliary loss (Switch Transformer, Fedus et al. 2022, eq. 4, with Megatron-Core's top-k
// normalisation): α·E·Σ_i f_i·P_i, f_i the fraction of the T·k routed copies that chose expert i
// (before capacity), P_i the mean over tokens of expert i's probability (softmax over all E
// logits, or the sigmoid scores normalised per token); α = model.moe.aux_loss_coeff. It equals α
// when routing is balanced. It is not added to the reported loss: its gradient, α·scale, is
// injected into the backward at the layer's output (Megatron-Core's MoEAuxLossAutoScaler), with
// scale the factor the stage's loss gradient gets (1/microbatches).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "models/nn/expert_parallel.hpp"
#include "models/nn/llama_layers.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin::nn {

/// GShard's capacity of each expert for `tokens` tokens: ceil(capacity_factor·tokens·top_k/E).
std::int64_t expert_capacity(const MoeSpec& moe, std::int64_t tokens);

/// One microbatch's routing of T tokens.
struct Routing {
  torch::Tensor experts;   ///< int64 [T, k]: each copy's expert
  torch::Tensor weights;   ///< fp32 [T, k]: each copy's weight (differentiable)
  torch::Tensor kept;      ///< bool [T, k]: false where the capacity dropped the copy
  torch::Tensor aux_loss;  ///< fp32 scalar, differentiable with respect to the router weight
};

/// The router: one parameter "weight" [E, d] and, for the sigmoid router, the buffer
/// "expert_bias" fp32 [E] (zeros at the start).
class RouterImpl : public torch::nn::Module {
 public:
  RouterImpl(std::int64_t d_model, const MoeSpec& moe, const torch::TensorOptions& options);
  /// x [T, d] (any floating dtype) -> its Routing as the header says.
  Routing forward(const torch::Tensor& x);
  /// The sigmoid router's bias step: b_i += rate·sign(mean(load) − load_i) for load fp64 or
  /// int64 [E], the tokens each expert was routed over a step (all ranks' and microbatches'). A
  /// no-op for the softmax router.
  void update_bias(const torch::Tensor& load);
  /// With `balanced`, forward routes token t to experts (t·k + j) mod E, j < k, whatever the
  /// logits (weighted as the router weights its choice): every expert takes the same number of
  /// copies (within one when E does not divide T·k). For timing the passes at a known load
  /// (Megatron-Core's moe_router_force_load_balancing, "only for benchmark"), never for training.
  void set_balanced(bool balanced) { balanced_ = balanced; }

  torch::Tensor weight, expert_bias;

 private:
  MoeSpec moe_;
  bool balanced_ = false;
};
TORCH_MODULE(Router);

/// E_local routed experts, SwiGLU FFNs w2(silu(w1 x)·w3 x), held as grouped tensors (as
/// Megatron-Core's GroupedMLP and torchtitan's GroupedExperts hold them): "w1" and "w3"
/// [E_local, fe, d], "w2" [E_local, d, fe]. Their gradients are computed during the backward
/// (they are not SplitLinear layers, so a split backward's W leaves them alone).
class GroupedExpertsImpl : public torch::nn::Module {
 public:
  GroupedExpertsImpl(std::int64_t experts, std::int64_t d_model, std::int64_t ffn_hidden,
                     const torch::TensorOptions& options);
  /// x [N, d] sorted by expert, `counts` int64 [E_local] (on any device) the rows of each expert
  /// in order, summing to N -> [N, d]: expert i's FFN on its rows. Throws std::invalid_argument
  /// when the counts do not sum to N.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& counts);

  torch::Tensor w1, w2, w3;
};
TORCH_MODULE(GroupedExperts);

/// The MoE feed-forward: submodules "router", "experts" (E/ep of them: member ep.rank's of its
/// expert-parallel group) and, when shared_expert_ffn_hidden > 0, "shared" (a FeedForward of that
/// width). With ep.size > 1 the permuted token copies go to their experts' members and back
/// (all_to_all_rows), Megatron-Core's alltoall dispatcher: the counts per expert are exchanged
/// first, each member regroups what it receives from [source][local expert] to [local
/// expert][source] order for its grouped experts and back.
class MoeFeedForwardImpl : public torch::nn::Module {
 public:
  MoeFeedForwardImpl(const ModelSpec& spec, const torch::TensorOptions& options,
                     ExpertParallelGroup ep = {});
  /// x [b, s, d] -> [b, s, d]: Σ over each token's kept copies of weight · expert(x), plus the
  /// shared expert's output; the auxiliary loss's gradient is injected into the backward. Adds
  /// this forward's copies per expert (kept ones) to tokens_per_expert() and its routed copies
  /// per expert (before capacity) to expert_load(), unless it is a recomputation's rerun
  /// (in_recomputation()).
  torch::Tensor forward(const torch::Tensor& x);

  const ExpertParallelGroup& expert_parallel() const { return ep_; }
  /// The factor the auxiliary loss's gradient is scaled by beside α (the stage loss's: 1/m).
  void set_aux_loss_scale(double scale) { aux_loss_scale_ = scale; }
  /// Kept token copies of this rank's tokens per expert (all E, wherever computed) since the last
  /// reset_counts(), int64 [E] on the CPU.
  const torch::Tensor& tokens_per_expert() const { return kept_counts_; }
  /// Routed token copies per expert (before the capacity drops them) since the last
  /// reset_counts(), int64 [E] on the CPU: the load the sigmoid router's bias balances.
  const torch::Tensor& expert_load() const { return load_counts_; }
  /// Per forward since the last reset_counts() with ep.size > 1, not a recomputation's rerun:
  /// {copies this member's experts received, copies it sent out to the members (its own
  /// included)}, the second being every member's mean under dropless routing (each routes
  /// T·top_k). Empty with ep.size 1.
  const std::vector<std::pair<std::int64_t, std::int64_t>>& member_copies() const {
    return member_copies_;
  }
  /// Zeroes both counts and empties member_copies().
  void reset_counts();

  Router router{nullptr};
  GroupedExperts experts{nullptr};
  FeedForward shared{nullptr};

 private:
  /// The routed experts on the permuted copies xs [N, d] with `counts` int64 [E] per expert:
  /// computed here, or dispatched to their members and combined back. -> [N, d].
  torch::Tensor run_experts(const torch::Tensor& xs, const torch::Tensor& counts);

  MoeSpec moe_;
  ExpertParallelGroup ep_;
  double aux_loss_scale_ = 1;
  torch::Tensor kept_counts_, load_counts_;
  std::vector<std::pair<std::int64_t, std::int64_t>> member_copies_;
};
TORCH_MODULE(MoeFeedForward);

}  // namespace dtwin::nn
