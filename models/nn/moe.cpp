#include "models/nn/moe.hpp"

#include <torch/torch.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/nn/autograd_node.hpp"
#include "models/nn/recompute.hpp"

namespace dtwin::nn {
namespace {

/// For each of `experts` int64 [n] (values in [0, E)) whether it is among the first `capacity`
/// of its expert's entries in descending `weights` [n] (stable: the earlier entry wins a tie).
torch::Tensor within_capacity(const torch::Tensor& experts, const torch::Tensor& weights,
                              std::int64_t num_experts, std::int64_t capacity) {
  const torch::Tensor by_weight = torch::argsort(weights, /*stable=*/true, 0, /*descending=*/true);
  const torch::Tensor by_expert =
      by_weight.index_select(0, torch::argsort(experts.index_select(0, by_weight), true, 0));
  const torch::Tensor sorted = experts.index_select(0, by_expert);
  const torch::Tensor counts = torch::bincount(experts, {}, num_experts);
  const torch::Tensor starts = counts.cumsum(0) - counts;
  const torch::Tensor position =
      torch::arange(experts.size(0), experts.options()) - starts.index_select(0, sorted);
  torch::Tensor kept = torch::zeros_like(experts, torch::kBool);
  kept.index_put_({by_expert}, position < capacity);
  return kept;
}

}  // namespace

std::int64_t expert_capacity(const MoeSpec& moe, std::int64_t tokens) {
  return static_cast<std::int64_t>(
      std::ceil(moe.capacity_factor * static_cast<double>(tokens * moe.top_k) /
                static_cast<double>(moe.num_experts)));
}

RouterImpl::RouterImpl(std::int64_t d_model, const MoeSpec& moe,
                       const torch::TensorOptions& options)
    : moe_(moe) {
  weight = register_parameter("weight", torch::empty({moe.num_experts, d_model}, options));
  if (moe.router == dtwin::Router::Sigmoid)
    expert_bias = register_buffer("expert_bias",
                                  torch::zeros({moe.num_experts}, options.dtype(torch::kFloat32)));
}

Routing RouterImpl::forward(const torch::Tensor& x) {
  const std::int64_t tokens = x.size(0), e = moe_.num_experts, k = moe_.top_k;
  const torch::Tensor logits = torch::matmul(x.to(torch::kFloat32), weight.to(torch::kFloat32).t());
  Routing r;
  // The k experts of each token ranked by `score` [T, E], or with forced balance token t's
  // experts (t·k + j) mod E, j < k: every expert takes T·k/E copies, within one.
  const auto pick = [&](const torch::Tensor& score) {
    if (!balanced_) return std::get<1>(score.topk(k, -1));
    const auto index = torch::TensorOptions(torch::kInt64).device(score.device());
    return torch::arange(tokens * k, index).view({tokens, k}).remainder(e);
  };
  torch::Tensor probs;  // [T, E], each row summing to 1: what the auxiliary loss balances
  if (moe_.router == dtwin::Router::Softmax) {
    r.experts = pick(logits.detach());
    r.weights = torch::softmax(logits.gather(1, r.experts), -1);
    probs = torch::softmax(logits, -1);
  } else {
    const torch::Tensor scores = torch::sigmoid(logits);
    r.experts = pick(scores.detach() + expert_bias);
    const torch::Tensor chosen = scores.gather(1, r.experts);
    r.weights = chosen / chosen.sum(-1, /*keepdim=*/true);
    probs = scores / scores.sum(-1, /*keepdim=*/true);
  }
  const torch::Tensor flat = r.experts.reshape({-1});
  const torch::Tensor routed = torch::bincount(flat, {}, e).to(torch::kFloat32);
  r.aux_loss = moe_.aux_loss_coeff * static_cast<double>(e) *
               (routed / static_cast<double>(tokens * k) * probs.mean(0)).sum();
  if (moe_.capacity_factor > 0) {
    const std::int64_t capacity = expert_capacity(moe_, tokens);
    r.kept = within_capacity(flat, r.weights.detach().reshape({-1}), e, capacity).view({tokens, k});
  } else {
    r.kept = torch::ones_like(r.experts, torch::kBool);
  }
  return r;
}

void RouterImpl::update_bias(const torch::Tensor& load) {
  if (moe_.router != dtwin::Router::Sigmoid) return;
  torch::NoGradGuard no_grad;
  const torch::Tensor l = load.to(torch::kFloat64).to(expert_bias.device());
  expert_bias.add_((l.mean() - l).sign().to(torch::kFloat32) * moe_.bias_update_rate);
}

GroupedExpertsImpl::GroupedExpertsImpl(std::int64_t experts, std::int64_t d_model,
                                       std::int64_t ffn_hidden,
                                       const torch::TensorOptions& options) {
  w1 = register_parameter("w1", torch::empty({experts, ffn_hidden, d_model}, options));
  w3 = register_parameter("w3", torch::empty({experts, ffn_hidden, d_model}, options));
  w2 = register_parameter("w2", torch::empty({experts, d_model, ffn_hidden}, options));
}

torch::Tensor GroupedExpertsImpl::forward(const torch::Tensor& x, const torch::Tensor& counts) {
  const torch::Tensor rows = counts.to(torch::kCPU, torch::kLong).contiguous();
  if (rows.size(0) != w1.size(0) || rows.sum().item<std::int64_t>() != x.size(0))
    throw std::invalid_argument(
        "GroupedExperts: counts for " + std::to_string(rows.size(0)) + " experts summing to " +
        std::to_string(rows.sum().item<std::int64_t>()) + ", expected " +
        std::to_string(w1.size(0)) + " summing to " + std::to_string(x.size(0)));
  // unbind, not a[i]: select's backward would allocate a whole [E, ...] gradient per expert,
  // unbind's stacks the experts' gradients once.
  const auto dtype = x.scalar_type();
  const std::vector<torch::Tensor> a = w1.to(dtype).unbind(0), b = w3.to(dtype).unbind(0),
                                   c = w2.to(dtype).unbind(0);
  std::vector<torch::Tensor> outputs;
  std::int64_t offset = 0;
  const auto* n = rows.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < rows.size(0); offset += n[i], ++i) {
    if (n[i] == 0) continue;
    const torch::Tensor in = x.narrow(0, offset, n[i]);
    const torch::Tensor hidden =
        torch::silu(torch::matmul(in, a[i].t())) * torch::matmul(in, b[i].t());
    outputs.push_back(torch::matmul(hidden, c[i].t()));
  }
  return outputs.empty() ? x * 0 : torch::cat(outputs, 0);
}

MoeFeedForwardImpl::MoeFeedForwardImpl(const ModelSpec& spec, const torch::TensorOptions& options,
                                       ExpertParallelGroup ep)
    : moe_(spec.moe), ep_(std::move(ep)) {
  if (ep_.size < 1 || moe_.num_experts % ep_.size != 0)
    throw std::invalid_argument("MoeFeedForward: " + std::to_string(ep_.size) +
                                " expert-parallel members do not split " +
                                std::to_string(moe_.num_experts) + " experts evenly");
  router = register_module("router", Router(spec.d_model, moe_, options));
  experts = register_module("experts", GroupedExperts(moe_.num_experts / ep_.size, spec.d_model,
                                                      moe_.expert_ffn_hidden, options));
  if (moe_.shared_expert_ffn_hidden > 0)
    shared = register_module("shared",
                             FeedForward(spec.d_model, moe_.shared_expert_ffn_hidden, options));
  reset_counts();
}

void MoeFeedForwardImpl::reset_counts() {
  kept_counts_ = torch::zeros({moe_.num_experts}, torch::kLong);
  load_counts_ = torch::zeros({moe_.num_experts}, torch::kLong);
  member_copies_.clear();
}

torch::Tensor MoeFeedForwardImpl::forward(const torch::Tensor& x) {
  const std::int64_t d = x.size(-1), k = moe_.top_k;
  const torch::Tensor tokens = x.reshape({-1, d});  // [T, d]
  const Routing r = router(tokens);
  const torch::Tensor flat = r.experts.reshape({-1});
  const torch::Tensor copies = r.kept.reshape({-1}).nonzero().squeeze(1);  // kept copy ids
  const torch::Tensor chosen = flat.index_select(0, copies);
  const torch::Tensor order = copies.index_select(0, torch::argsort(chosen, true, 0));
  const torch::Tensor token = order.div(k, "floor");  // each permuted copy's token
  const torch::Tensor counts = torch::bincount(chosen, {}, moe_.num_experts);
  torch::Tensor routed;  // [N, d]
  if (moe_.pad_to_capacity) {
    // Expert i's copies in rows [i·C, i·C + counts[i]) of E·C, the rest zero rows (a zero row
    // appended to the tokens), whose SwiGLU outputs are zero and are dropped after.
    const std::int64_t capacity = expert_capacity(moe_, tokens.size(0));
    const torch::Tensor starts = counts.cumsum(0) - counts;
    const torch::Tensor expert = flat.index_select(0, order);
    const torch::Tensor slot = expert * capacity + torch::arange(order.size(0), order.options()) -
                               starts.index_select(0, expert);
    const torch::Tensor source =
        torch::full({moe_.num_experts * capacity}, tokens.size(0), order.options())
            .index_put_({slot}, token);
    const torch::Tensor padded = torch::cat({tokens, torch::zeros_like(tokens.narrow(0, 0, 1))});
    routed = run_experts(padded.index_select(0, source),
                         torch::full({moe_.num_experts}, capacity, counts.options()))
                 .index_select(0, slot);
  } else {
    routed = run_experts(tokens.index_select(0, token), counts);
  }
  const torch::Tensor weight =
      r.weights.reshape({-1}).index_select(0, order).to(x.scalar_type()).unsqueeze(1);
  torch::Tensor out = torch::zeros_like(tokens).index_add(0, token, routed * weight);
  if (shared) out = out + shared(tokens);
  if (!in_recomputation()) {
    kept_counts_ += counts.cpu();
    load_counts_ += torch::bincount(flat, {}, moe_.num_experts).cpu();
  }
  const double scale = aux_loss_scale_;
  out = with_backward(
      out.detach(), {out, r.aux_loss},
      [scale](const torch::Tensor& grad) {
        return std::vector<torch::Tensor>{
            grad, torch::full({}, scale, grad.options().dtype(torch::kFloat32))};
      },
      "MoeAuxLossBackward");
  return out.view(x.sizes());
}

torch::Tensor MoeFeedForwardImpl::run_experts(const torch::Tensor& xs,
                                              const torch::Tensor& counts) {
  if (ep_.size == 1) return experts(xs, counts);
  const std::int64_t members = ep_.size, local = moe_.num_experts / members;
  // sent[j·local + i]: copies for member j's expert i; came[s·local + i]: from member s for mine.
  const torch::Tensor sent = counts.to(torch::kCPU, torch::kLong).contiguous();
  const torch::Tensor came =
      exchange_counts(counts, ep_).to(torch::kCPU, torch::kLong).contiguous();
  const auto* out_n = sent.data_ptr<std::int64_t>();
  const auto* in_n = came.data_ptr<std::int64_t>();
  std::vector<std::int64_t> send(members, 0), recv(members, 0), start(members * local + 1, 0);
  for (std::int64_t j = 0; j < members; ++j)
    for (std::int64_t i = 0; i < local; ++i) {
      send[j] += out_n[j * local + i];
      recv[j] += in_n[j * local + i];
      start[j * local + i + 1] = start[j * local + i] + in_n[j * local + i];
    }
  // What came, [source][local expert], regrouped to [local expert][source] for the experts.
  std::vector<std::int64_t> order;
  order.reserve(start.back());
  torch::Tensor per_expert = torch::zeros({local}, torch::kLong);
  for (std::int64_t i = 0; i < local; ++i)
    for (std::int64_t j = 0; j < members; ++j) {
      for (std::int64_t r = start[j * local + i]; r < start[j * local + i + 1]; ++r)
        order.push_back(r);
      per_expert[i] += in_n[j * local + i];
    }
  if (!in_recomputation())
    member_copies_.emplace_back(start.back(),
                                std::accumulate(send.begin(), send.end(), std::int64_t{0}));
  const torch::Tensor regroup = torch::tensor(order, torch::kLong).to(xs.device());
  const torch::Tensor arrived = all_to_all_rows(xs, send, recv, ep_);
  const torch::Tensor computed = experts(arrived.index_select(0, regroup), per_expert);
  const torch::Tensor back = computed.index_select(0, torch::argsort(regroup));
  return all_to_all_rows(back, recv, send, ep_);
}

}  // namespace dtwin::nn
