// Closed forms of a mixture-of-experts layer (model.moe) under expert parallelism (layout.ep,
// layout.etp), per microbatch and per GPU. Not yet consumed by CostModel, which refuses MoE
// scenarios until its stages charge these terms.
//
// Notation: T = b·s tokens per microbatch, d = d_model, E = num_experts, k = top_k,
// fe = expert_ffn_hidden, fs = shared_expert_ffn_hidden, e = bytes per element, ep, etp as in
// LayoutSpec. Megatron-Core requires sequence parallelism for MoE with tp > 1, so each GPU
// enters the MoE layer with Tg = T/tp tokens (T without tp). Experts are llama SwiGLU MLPs (gate,
// up, down: 3·d·fe weights each).
//
// Routed tokens: each GPU sends its Tg·k token copies to the ep ranks owning their experts, so
// the mean rank receives Tg·k of them; the busiest receives ρ·Tg·k with ρ = load_imbalance, or
// with a capacity factor c (GShard, Lepikhin et al. 2020) ρ = min(load_imbalance, c): each
// expert takes at most c times its even share of the group's ep·Tg·k copies, c·ep·Tg·k/E, so a
// rank's E/ep experts at most c·Tg·k.
//
// All-to-all (Megatron-Core's alltoall token dispatcher; DeepSeek-V3 report §3.2.2): dispatch
// before the experts and combine after them each send ρ·Tg·k·d·e·(ep − 1)/ep bytes per GPU (the
// copies bound for the GPU's own rank stay); the backward runs both again on the gradients, and
// full recomputation repeats the forward's two: 4 (6) per MoE layer per microbatch.
#pragma once

#include "models/cost/parallel_memory.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin {

/// Layers with experts: n_layers − first_dense_layers (0 for a dense model).
int moe_layers(const ModelSpec& model);

/// MoE layers among layers [first_layer, first_layer + num_layers), a stage's: those at index
/// >= first_dense_layers; 0 for a dense model.
int moe_layers_in(const ModelSpec& model, int first_layer, int num_layers);

/// ρ above: the busiest expert-parallel rank's routed tokens over the mean.
double moe_busiest_factor(const MoeSpec& moe);

/// Tokens a GPU enters each MoE layer with: T/tp (sequence parallel) or T, for T tokens per
/// microbatch.
double moe_tokens_per_gpu(const LayoutSpec& layout, double tokens_per_microbatch);

/// Token copies a GPU's experts take from its expert-parallel group per microbatch and MoE layer
/// (before expert tensor parallelism gathers its peers'), the rows each GPU dispatches: ρ·Tg·k,
/// or with model.moe.pad_to_capacity every expert's input padded to its capacity
/// C = ceil(c·Tg·k/E) on each source, E·C (fixed; Megatron-Core's
/// --moe-pad-expert-input-to-capacity).
double moe_routed_copies(const ModelSpec& model, const LayoutSpec& layout,
                         double tokens_per_microbatch);

/// Bytes one GPU sends in one all-to-all (a dispatch or a combine) of one MoE layer per
/// microbatch: moe_routed_copies·d·e·(ep − 1)/ep, ρ·Tg·k·d·e·(ep − 1)/ep without padding.
double moe_all_to_all_bytes(const ModelSpec& model, const LayoutSpec& layout,
                            double tokens_per_microbatch, double bytes_per_element);

/// Seconds of one such all-to-all with the expert-parallel group placed by the folded rank order
/// (scenario.hpp's LayoutSpec: the group is ep GPUs at stride etp inside ep·etp consecutive
/// GPUs): group_all_to_all_seconds (models/cost/group_links.hpp) of ep members etp apart; 0 when
/// ep = 1.
double moe_all_to_all_seconds(const Scenario& scenario, double bytes);

/// Routed expert weights of one MoE layer: E·3·d·fe.
double expert_params(const MoeSpec& moe, int d_model);
/// What one GPU holds of them: E·3·d·fe / (ep·etp).
double expert_params_per_gpu(const ModelSpec& model, const LayoutSpec& layout);
/// All weights of a MoE layer's feed-forward: experts, the router d·E and the shared expert
/// 3·d·fs.
double moe_ffn_params(const ModelSpec& model);
/// The feed-forward weights one token uses in a MoE layer: k·3·d·fe + 3·d·fs + d·E.
double moe_active_ffn_params(const ModelSpec& model);

/// Token copies the busiest GPU's local experts process per microbatch in one MoE layer,
/// moe_routed_copies·etp = ρ·Tg·k·etp without padding (its expert-tensor-parallel peers' tokens
/// too: each of the etp GPUs computes 1/etp of every expert's width for all of them); over its E/ep
/// local experts this is the grouped GEMM's tokens per expert.
double moe_expert_tokens(const ModelSpec& model, const LayoutSpec& layout,
                         double tokens_per_microbatch);

/// Bytes of one GPU's expert tensor-parallel all-gather (before its experts) or reduce-scatter
/// (after them) in one MoE layer per microbatch: the routed copies its etp group gathers,
/// moe_expert_tokens · d · e = ρ·Tg·k·etp·d·e. Megatron-Core's alltoall token dispatcher gathers
/// over the expert tensor-parallel group the tokens each member received, so that each computes
/// its 1/etp of every local expert's width for all of them (MoEAlltoAllTokenDispatcher,
/// gather_from_sequence_parallel_region / reduce_scatter_to_sequence_parallel_region); 0 when
/// etp = 1.
double moe_expert_tp_bytes(const ModelSpec& model, const LayoutSpec& layout,
                           double tokens_per_microbatch, double bytes_per_element);

/// Forward FLOPs of one MoE layer's feed-forward on the busiest GPU per microbatch: the router
/// 2·Tg·d·E, the experts 2·ρ·Tg·k·etp·3·d·fe/etp = 6·ρ·Tg·k·d·fe, the shared expert split by tp
/// 6·Tg·d·fs. With ρ = 1 the tp GPUs together do 2·T·moe_active_ffn_params.
double moe_ffn_forward_flops(const ModelSpec& model, const LayoutSpec& layout,
                             double tokens_per_microbatch);

/// Bytes per GPU of one MoE layer's expert weights, gradients and AdamW states
/// (model_state_bytes of expert_params_per_gpu), sharded under ZeRO 1..3 over the expert
/// data-parallel group edp = dp·tp/(ep·etp), as Megatron-Core's distributed optimizer shards
/// expert states.
double expert_state_bytes_per_gpu(const ModelSpec& model, const LayoutSpec& layout,
                                  double bytes_per_element, double grad_bytes_per_element);

/// Activation bytes one GPU keeps from one MoE layer's F per microbatch until its backward:
/// layer_activation_bytes of the layer without its dense MLP (x.f = 0), plus, unless recomputed
/// in full (which keeps only the layer input), the routed token copies permuted and the experts'
/// output, 2·Tg·k·d·e, and the llama formula's MLP share 4·tokens·width·e at the experts' width
/// for the GPU's expert tokens, 4·Te·(fe/etp)·e, and at the shared expert's, 4·T·(fs/tp)·e.
/// Te at the worst microbatch's routing, MoeSpec::peak_imbalance (dropless, a rank's copies
/// follow its routing, and its peak the microbatches in flight then). `x` is the dense layer's
/// shape (T = x.s·x.b).
double moe_layer_activation_bytes(const ModelSpec& model, const LayoutSpec& layout,
                                  LayerActivationShape x, Recompute recompute, double e);
/// The part of it a split backward's I frees: input_backward_freed_bytes without the dense MLP,
/// plus the dense formula's net MLP share (3 hidden tensors freed, 2 gradients stashed) at the
/// experts' and the shared expert's widths and tokens, (Te·fe/etp + T·fs/tp)·e, without
/// recomputation; 0 with it.
double moe_input_backward_freed_bytes(const ModelSpec& model, const LayoutSpec& layout,
                                      LayerActivationShape x, Recompute recompute, double e);

}  // namespace dtwin
