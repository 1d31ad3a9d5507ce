#include "models/cost/moe_layer.hpp"

#include <cmath>

#include <algorithm>

#include "models/cost/group_links.hpp"
#include "models/cost/parallel_memory.hpp"

namespace dtwin {

int moe_layers(const ModelSpec& model) {
  return moe_layers_in(model, 0, model.n_layers);
}

int moe_layers_in(const ModelSpec& model, int first_layer, int num_layers) {
  if (!model.moe.enabled()) return 0;
  const int dense = std::clamp(model.moe.first_dense_layers - first_layer, 0, num_layers);
  return num_layers - dense;
}

double moe_busiest_factor(const MoeSpec& moe) {
  return moe.capacity_factor > 0 ? std::min(moe.load_imbalance, moe.capacity_factor)
                                 : moe.load_imbalance;
}

double moe_tokens_per_gpu(const LayoutSpec& layout, double tokens_per_microbatch) {
  return tokens_per_microbatch / layout.tp;
}

double moe_routed_copies(const ModelSpec& model, const LayoutSpec& layout,
                         double tokens_per_microbatch) {
  const MoeSpec& e = model.moe;
  const double copies = moe_tokens_per_gpu(layout, tokens_per_microbatch) * e.top_k;
  if (e.pad_to_capacity && e.capacity_factor > 0)
    return e.num_experts * std::ceil(e.capacity_factor * copies / e.num_experts);
  return moe_busiest_factor(e) * copies;
}

double moe_all_to_all_bytes(const ModelSpec& model, const LayoutSpec& layout,
                            double tokens_per_microbatch, double bytes_per_element) {
  const double routed = moe_routed_copies(model, layout, tokens_per_microbatch);
  return routed * model.d_model * bytes_per_element * (layout.ep - 1) / layout.ep;
}

double moe_all_to_all_seconds(const Scenario& scenario, double bytes) {
  const LayoutSpec& l = scenario.layout;
  return group_all_to_all_seconds(scenario.cluster, l.ep, l.expert_tp(), bytes);
}

double expert_params(const MoeSpec& moe, int d_model) {
  return 3.0 * moe.num_experts * d_model * moe.expert_ffn_hidden;
}

double expert_params_per_gpu(const ModelSpec& model, const LayoutSpec& layout) {
  return expert_params(model.moe, model.d_model) / (layout.ep * layout.expert_tp());
}

double moe_ffn_params(const ModelSpec& model) {
  const double d = model.d_model;
  return expert_params(model.moe, model.d_model) + d * model.moe.num_experts +
         3 * d * model.moe.shared_expert_ffn_hidden;
}

double moe_active_ffn_params(const ModelSpec& model) {
  const double d = model.d_model;
  const MoeSpec& e = model.moe;
  return 3 * d * e.expert_ffn_hidden * e.top_k + 3 * d * e.shared_expert_ffn_hidden +
         d * e.num_experts;
}

double moe_expert_tokens(const ModelSpec& model, const LayoutSpec& layout,
                         double tokens_per_microbatch) {
  return moe_routed_copies(model, layout, tokens_per_microbatch) * layout.expert_tp();
}

double moe_expert_tp_bytes(const ModelSpec& model, const LayoutSpec& layout,
                           double tokens_per_microbatch, double bytes_per_element) {
  if (layout.expert_tp() == 1) return 0;
  return moe_expert_tokens(model, layout, tokens_per_microbatch) * model.d_model *
         bytes_per_element;
}

double moe_ffn_forward_flops(const ModelSpec& model, const LayoutSpec& layout,
                             double tokens_per_microbatch) {
  const MoeSpec& e = model.moe;
  const double d = model.d_model, tokens = moe_tokens_per_gpu(layout, tokens_per_microbatch);
  const double experts = 2 * moe_expert_tokens(model, layout, tokens_per_microbatch) * 3 * d *
                         e.expert_ffn_hidden / layout.expert_tp();
  return 2 * tokens * d * e.num_experts + experts + 6 * tokens * d * e.shared_expert_ffn_hidden;
}

double expert_state_bytes_per_gpu(const ModelSpec& model, const LayoutSpec& layout,
                                  double bytes_per_element, double grad_bytes_per_element) {
  return model_state_bytes(expert_params_per_gpu(model, layout), layout.zero, layout.expert_dp(),
                           layout.offload, bytes_per_element, grad_bytes_per_element);
}

namespace {

/// The MoE feed-forward's hidden elements per GPU per microbatch (the MLP share's unit of the
/// llama activation formula): Te·fe/etp + T·fs/tp.
double moe_hidden_elements(const ModelSpec& model, const LayoutSpec& layout, double T) {
  return moe_expert_tokens(model, layout, T) * model.moe.expert_ffn_hidden / layout.expert_tp() +
         T * model.moe.shared_expert_ffn_hidden / layout.tp;
}

/// `model` with its worst microbatch's routing (MoeSpec::peak_imbalance) as the load imbalance:
/// the copies whose activations a rank holds at its memory peak.
ModelSpec at_peak_routing(const ModelSpec& model) {
  ModelSpec peak = model;
  peak.moe.load_imbalance = model.moe.peak_imbalance();
  return peak;
}

}  // namespace

double moe_layer_activation_bytes(const ModelSpec& model, const LayoutSpec& layout,
                                  LayerActivationShape x, Recompute recompute, double e) {
  x.f = 0;
  const double rest = layer_activation_bytes(x, recompute, model.attention, e);
  if (recompute == Recompute::Full) return rest;
  const double T = x.s * x.b;
  const double routed = moe_tokens_per_gpu(layout, T) * model.moe.top_k * model.d_model;
  return rest + e * (2 * routed + 4 * moe_hidden_elements(at_peak_routing(model), layout, T));
}

double moe_input_backward_freed_bytes(const ModelSpec& model, const LayoutSpec& layout,
                                      LayerActivationShape x, Recompute recompute, double e) {
  if (recompute != Recompute::None) return 0;
  x.f = 0;
  return input_backward_freed_bytes(x, recompute, model.attention, e) +
         e * moe_hidden_elements(at_peak_routing(model), layout, x.s * x.b);
}

}  // namespace dtwin
