// The runtime's mixture-of-experts feed-forward (models/nn/moe.hpp) against a reference written
// token by token here: each token's experts and weights from the router's definition, each
// chosen expert's SwiGLU applied to the token alone, the weighted sum plus the shared expert; the
// auxiliary loss from Switch Transformer's eq. 4 written out. Outputs and every gradient (the
// auxiliary loss's included) must agree to fp32 rounding.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <mutex>
#include <vector>

#include "models/nn/moe.hpp"
#include "models/nn/param_init.hpp"
#include "models/nn/recompute.hpp"
#include "models/nn/stage_module.hpp"
#include "runtime/expert_counts.hpp"
#include "runtime/process_groups.hpp"
#include "tests/tiny_llama.hpp"

using namespace dtwin;

namespace {

constexpr std::int64_t kD = 16, kE = 4, kFe = 24, kFs = 8;

ModelSpec moe_model(dtwin::Router router, double capacity = 0, int shared = kFs) {
  ModelSpec spec = test::tiny_llama();
  spec.d_model = kD;
  spec.n_heads = 2;
  spec.moe.num_experts = kE;
  spec.moe.top_k = 2;
  spec.moe.expert_ffn_hidden = kFe;
  spec.moe.shared_expert_ffn_hidden = shared;
  spec.moe.capacity_factor = capacity;
  spec.moe.router = router;
  spec.moe.aux_loss_coeff = 0.05;
  return spec;
}

nn::MoeFeedForward make_layer(const ModelSpec& spec) {
  nn::MoeFeedForward layer(spec, torch::TensorOptions());
  nn::init_parameters(*layer, 9, 4);
  return layer;
}

torch::Tensor swiglu(const torch::Tensor& x, const torch::Tensor& w1, const torch::Tensor& w3,
                     const torch::Tensor& w2) {
  return torch::matmul(torch::silu(torch::matmul(x, w1.t())) * torch::matmul(x, w3.t()), w2.t());
}

struct Reference {
  torch::Tensor out;                         // [T, d]
  torch::Tensor aux;                         // scalar
  std::vector<std::vector<int64_t>> chosen;  // each token's kept experts
};

// The layer's definition token by token. `capacity` 0: dropless; else each expert keeps its
// `capacity` copies of largest weight (the earlier copy on a tie).
Reference reference(nn::MoeFeedForwardImpl& m, const torch::Tensor& x, const MoeSpec& moe,
                    int64_t capacity = 0) {
  const int64_t tokens = x.size(0), k = moe.top_k;
  const torch::Tensor logits = torch::matmul(x, m.router->weight.t());
  std::vector<std::vector<std::pair<int64_t, torch::Tensor>>> picks(tokens);  // (expert, weight)
  torch::Tensor probs;
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int64_t> order(kE);
    for (int64_t i = 0; i < kE; ++i) order[i] = i;
    torch::Tensor score =
        moe.router == dtwin::Router::Softmax ? logits[t] : torch::sigmoid(logits[t]);
    const torch::Tensor select = moe.router == dtwin::Router::Softmax
                                     ? score.detach()
                                     : score.detach() + m.router->expert_bias;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return select[a].item<float>() > select[b].item<float>();
    });
    torch::Tensor top = torch::stack({score[order[0]], score[order[1]]});
    const torch::Tensor w =
        moe.router == dtwin::Router::Softmax ? torch::softmax(top, 0) : top / top.sum();
    for (int64_t j = 0; j < k; ++j) picks[t].push_back({order[j], w[j]});
  }
  probs = moe.router == dtwin::Router::Softmax
              ? torch::softmax(logits, -1)
              : torch::sigmoid(logits) / torch::sigmoid(logits).sum(-1, true);
  Reference r;
  torch::Tensor aux = torch::zeros({});
  for (int64_t i = 0; i < kE; ++i) {
    double routed = 0;
    for (const auto& p : picks)
      for (const auto& [e, w] : p) routed += e == i;
    aux = aux + routed / double(tokens * k) * probs.select(1, i).mean();
  }
  r.aux = moe.aux_loss_coeff * kE * aux;
  // Capacity: per expert, its copies by descending weight, copy index t·k + j breaking ties.
  std::vector<std::vector<bool>> kept(tokens, std::vector<bool>(k, true));
  if (capacity > 0)
    for (int64_t i = 0; i < kE; ++i) {
      std::vector<std::pair<float, int64_t>> copies;
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t j = 0; j < k; ++j)
          if (picks[t][j].first == i)
            copies.push_back({picks[t][j].second.item<float>(), t * k + j});
      std::stable_sort(copies.begin(), copies.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      for (size_t n = capacity; n < copies.size(); ++n)
        kept[copies[n].second / k][copies[n].second % k] = false;
    }
  std::vector<torch::Tensor> rows;
  r.chosen.resize(tokens);
  for (int64_t t = 0; t < tokens; ++t) {
    const torch::Tensor xt = x[t].unsqueeze(0);
    torch::Tensor y = torch::zeros({1, kD});
    for (int64_t j = 0; j < k; ++j) {
      if (!kept[t][j]) continue;
      const int64_t e = picks[t][j].first;
      r.chosen[t].push_back(e);
      y = y + picks[t][j].second * swiglu(xt, m.experts->w1[e], m.experts->w3[e], m.experts->w2[e]);
    }
    if (m.shared) y = y + m.shared(xt);
    rows.push_back(y);
  }
  r.out = torch::cat(rows, 0);
  return r;
}

// Largest |a − b| over the largest |b|.
double relative(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

// Gradients of every parameter after backward of (out·up).sum() (+ scale·aux for the reference).
std::map<std::string, torch::Tensor> grads_of(nn::MoeFeedForwardImpl& m) {
  std::map<std::string, torch::Tensor> g;
  for (const auto& p : m.named_parameters()) {
    g[p.key()] =
        p.value().grad().defined() ? p.value().grad().clone() : torch::zeros_like(p.value());
    p.value().mutable_grad() = torch::Tensor();
  }
  return g;
}

}  // namespace

TEST_CASE("the MoE feed-forward equals the token-by-token definition, outputs and gradients",
          "[torch][moe]") {
  const auto router = GENERATE(dtwin::Router::Softmax, dtwin::Router::Sigmoid);
  const int shared = GENERATE(0, int(kFs));
  CAPTURE(router == dtwin::Router::Sigmoid, shared);
  const ModelSpec spec = moe_model(router, 0, shared);
  nn::MoeFeedForward layer = make_layer(spec);
  if (router == dtwin::Router::Sigmoid)  // a bias that changes some choices but not the weights
    layer->router->expert_bias.copy_(torch::tensor({0.3f, -0.2f, 0.0f, 0.1f}));
  const double scale = 0.25;
  layer->set_aux_loss_scale(scale);
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({2, 9, kD}), up = torch::randn({2, 9, kD});

  const torch::Tensor xa = x.clone().requires_grad_(true);
  const torch::Tensor out = layer->forward(xa);
  (out * up).sum().backward();
  const auto grads = grads_of(*layer);

  const torch::Tensor xb = x.clone().requires_grad_(true);
  const Reference ref = reference(*layer, xb.view({-1, kD}), spec.moe);
  ((ref.out * up.view({-1, kD})).sum() + scale * ref.aux).backward();
  const auto want = grads_of(*layer);

  CHECK(relative(out.view({-1, kD}), ref.out) < 1e-5);
  CHECK(relative(xa.grad(), xb.grad()) < 1e-5);
  for (const auto& [name, g] : want) {
    CAPTURE(name);
    CHECK(relative(grads.at(name), g) < 1e-5);
  }
  // Every token's 2 copies were kept: 18 tokens · 2 copies counted, by expert.
  CHECK(layer->tokens_per_expert().sum().item<int64_t>() == 36);
  CHECK(torch::equal(layer->tokens_per_expert(), layer->expert_load()));
  std::vector<int64_t> counted(kE, 0);
  for (const auto& c : ref.chosen)
    for (int64_t e : c) ++counted[e];
  for (int64_t i = 0; i < kE; ++i)
    CHECK(layer->tokens_per_expert()[i].item<int64_t>() == counted[i]);
}

TEST_CASE("a capacity factor keeps each expert's copies of largest weight, dropping the rest",
          "[torch][moe]") {
  // 18 tokens · 2 copies over 4 experts at capacity factor 0.5: at most ceil(0.5·36/4) = 5 each.
  const ModelSpec spec = moe_model(dtwin::Router::Softmax, 0.5);
  nn::MoeFeedForward layer = make_layer(spec);
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({2, 9, kD}), up = torch::randn({2, 9, kD});
  const torch::Tensor xa = x.clone().requires_grad_(true);
  (layer->forward(xa) * up).sum().backward();
  const auto grads = grads_of(*layer);
  const torch::Tensor xb = x.clone().requires_grad_(true);
  const Reference ref = reference(*layer, xb.view({-1, kD}), spec.moe, 5);
  ((ref.out * up.view({-1, kD})).sum() + ref.aux).backward();
  const auto want = grads_of(*layer);
  CHECK(relative(xa.grad(), xb.grad()) < 1e-5);
  for (const auto& [name, g] : want) {
    CAPTURE(name);
    CHECK(relative(grads.at(name), g) < 1e-5);
  }
  CHECK(layer->tokens_per_expert().max().item<int64_t>() <= 5);
  CHECK(layer->tokens_per_expert().sum().item<int64_t>() < 36);  // some copies were dropped
  CHECK(layer->expert_load().sum().item<int64_t>() == 36);       // the load counts them all
}

TEST_CASE("the sigmoid router's bias steps toward the mean load and the softmax router's has none",
          "[torch][moe]") {
  ModelSpec spec = moe_model(dtwin::Router::Sigmoid);
  spec.moe.bias_update_rate = 0.01;
  nn::MoeFeedForward layer = make_layer(spec);
  layer->router->update_bias(torch::tensor({10, 2, 6, 6}, torch::kLong));  // mean 6
  CHECK(torch::allclose(layer->router->expert_bias, torch::tensor({-0.01f, 0.01f, 0.0f, 0.0f})));
  nn::MoeFeedForward softmax = make_layer(moe_model(dtwin::Router::Softmax));
  CHECK_FALSE(softmax->router->expert_bias.defined());
  softmax->router->update_bias(torch::tensor({10, 2, 6, 6}, torch::kLong));  // a no-op
}

TEST_CASE("a router set balanced gives every expert the same copies whatever its logits",
          "[torch][moe]") {
  for (const dtwin::Router kind : {dtwin::Router::Softmax, dtwin::Router::Sigmoid}) {
    nn::MoeFeedForward layer = make_layer(moe_model(kind));
    // Every token alike, so that the router's own choice sends all of them to the same 2 experts.
    const torch::Tensor x = torch::randn({1, kD}).expand({18, kD}).contiguous();
    CHECK(torch::bincount(layer->router->forward(x).experts.reshape({-1}), {}, kE)
              .max()
              .item<int64_t>() == 18);
    layer->router->set_balanced(true);
    const nn::Routing r = layer->router->forward(x);
    // 18 tokens x 2 copies over 4 experts: token t takes experts 2t mod 4 and 2t+1 mod 4.
    CHECK(torch::equal(torch::bincount(r.experts.reshape({-1}), {}, kE),
                       torch::tensor({9, 9, 9, 9}, torch::kLong)));
    CHECK(torch::equal(r.experts[1], torch::tensor({2, 3}, torch::kLong)));
    // Weighted as the router weights its choice: positive, summing to 1 per token.
    CHECK(torch::allclose(r.weights.sum(-1), torch::ones({18})));
    CHECK(r.weights.min().item<float>() > 0);
  }
}

TEST_CASE("the auxiliary loss is α under balanced routing and grows with imbalance",
          "[torch][moe]") {
  const ModelSpec spec = moe_model(dtwin::Router::Softmax);
  nn::MoeFeedForward layer = make_layer(spec);
  // Router rows e_0..e_3 and tokens ±e_i: each token prefers expert i most, i's opposite least.
  torch::NoGradGuard no_grad;
  layer->router->weight.zero_();
  for (int64_t i = 0; i < kE; ++i) layer->router->weight[i][i] = 1;
  torch::Tensor balanced = torch::zeros({kE, kD});
  for (int64_t i = 0; i < kE; ++i) balanced[i][i] = 1;
  // Each token picks its expert i first; the other three tie and topk takes one: the aux loss
  // is α·E·Σ f_i·P_i with P_i = 1/E for these symmetric probabilities, so α exactly.
  const nn::Routing r = layer->router->forward(balanced);
  CHECK(r.aux_loss.item<double>() == Approx(spec.moe.aux_loss_coeff).epsilon(1e-6));
  // Every token e_0: f_0 = 1/2, P_0 = e/(e + 3) and the rest (1 − P_0)/3: 4·(0.5·0.475 +
  // 0.5·0.175).
  const nn::Routing skewed = layer->router->forward(balanced.select(0, 0).expand({kE, kD}));
  CHECK(skewed.aux_loss.item<double>() > 1.25 * spec.moe.aux_loss_coeff);  // 1.3 α
}

TEST_CASE("full recomputation counts a MoE layer's tokens once and gives the same gradients",
          "[torch][moe]") {
  ModelSpec spec = moe_model(dtwin::Router::Softmax);
  spec.moe.first_dense_layers = 1;  // layers 1..3 are MoE layers
  const torch::Tensor ids = test::random_tokens(2, spec.seq_len, spec.vocab_size, 3);
  const torch::Tensor targets = test::random_tokens(2, spec.seq_len, spec.vocab_size, 4);
  std::map<std::string, torch::Tensor> first;
  for (const Recompute recompute : {Recompute::None, Recompute::Full}) {
    CAPTURE(recompute == Recompute::Full);
    nn::StageModule stage(spec, 0, spec.n_layers, true, true, 5, torch::kCPU, torch::kFloat32,
                          recompute);
    REQUIRE(stage.moe_layers().size() == 3);
    CHECK(stage.moe_layers().begin()->first == 1);
    stage.forward(ids, targets).backward();
    for (const auto& [layer, moe] : stage.moe_layers())
      CHECK(moe->tokens_per_expert().sum().item<int64_t>() == 2 * spec.seq_len * 2);
    const auto grads = test::snapshot(stage, true);
    if (first.empty()) first = grads;
    for (const auto& [name, g] : grads) {
      CAPTURE(name);
      CHECK(relative(g, first.at(name)) < 1e-6);
    }
  }
}

TEST_CASE(
    "expert parallelism over 2 members, each with its own microbatch, gives the one-rank losses, "
    "routing and gradients, and counts the all-to-all bytes it sends",
    "[torch][moe]") {
  ModelSpec spec = moe_model(dtwin::Router::Softmax);
  spec.moe.first_dense_layers = 1;
  constexpr int kMembers = 2;
  std::vector<torch::Tensor> ids, targets;
  for (int m = 0; m < kMembers; ++m) {
    ids.push_back(test::random_tokens(2, spec.seq_len, spec.vocab_size, 10 + m));
    targets.push_back(test::random_tokens(2, spec.seq_len, spec.vocab_size, 20 + m));
  }
  // One rank, both microbatches, each loss scaled by 1/2 as the executor's backward does.
  nn::StageModule whole(spec, 0, spec.n_layers, true, true, 5);
  whole.set_aux_loss_scale(1.0 / kMembers);
  std::vector<double> losses;
  std::vector<torch::Tensor> routed;  // tokens per expert of each microbatch, per MoE layer
  for (int m = 0; m < kMembers; ++m) {
    const torch::Tensor loss = whole.forward(ids[m], targets[m]);
    losses.push_back(loss.item<double>());
    (loss / kMembers).backward();
    std::vector<torch::Tensor> counts;
    for (auto& [layer, moe] : whole.moe_layers()) {
      counts.push_back(moe->tokens_per_expert().clone());
      moe->reset_counts();
    }
    routed.push_back(torch::stack(counts));
  }
  const auto grads = test::snapshot(whole, true);
  double largest = 0;
  for (const auto& [name, g] : grads) largest = std::max(largest, g.abs().max().item<double>());

  std::mutex mutex;
  std::vector<std::pair<std::string, bool>> ok;
  rt::run_as_thread_group(kMembers, "ep", [&](int rank, const auto& backend) {
    torch::set_num_threads(1);
    nn::ExpertParallelGroup ep{backend, rank, kMembers};
    nn::StageModule member(spec, 0, spec.n_layers, true, true, 5, torch::kCPU, torch::kFloat32,
                           Recompute::None, {}, {}, ep);
    const torch::Tensor loss = member.forward(ids[rank], targets[rank]);
    loss.backward();
    // Dense gradients averaged over the members (they are data-parallel replicas); the experts'
    // summed over the expert data-parallel group (here the member alone) and divided likewise.
    for (const torch::Tensor& p : member.expert_parameters(false)) {
      std::vector<torch::Tensor> g{p.grad()};
      backend->allreduce(g)->wait();
      p.grad().div_(kMembers);
    }
    for (const torch::Tensor& p : member.expert_parameters()) p.grad().div_(kMembers);
    std::vector<torch::Tensor> counts;
    for (const auto& [layer, moe] : member.moe_layers()) counts.push_back(moe->tokens_per_expert());
    const torch::Tensor mine = torch::stack(counts);  // [layers, E]
    // The forward's dispatch sends the copies bound for the other member's 2 experts, its combine
    // returns the other member's copies computed here; the backward sends both again as
    // gradients. 16 floats a row.
    const int64_t out = mine.narrow(1, (1 - rank) * 2, 2).sum().item<int64_t>();
    const int64_t back = routed[1 - rank].narrow(1, rank * 2, 2).sum().item<int64_t>();
    const std::lock_guard<std::mutex> lock(mutex);
    ok.emplace_back("loss", std::abs(loss.item<double>() - losses[rank]) <= 1e-5 * losses[rank]);
    ok.emplace_back("routing", torch::equal(mine, routed[rank]));
    ok.emplace_back("bytes",
                    member.expert_parallel().bytes_sent->load() == 2 * (out + back) * kD * 4);
    // Per MoE layer, one forward: {copies its experts received from both, copies it sent}.
    bool copies = true;
    int index = 0;
    for (const auto& [layer, moe] : member.moe_layers()) {
      const int64_t received = routed[0][index].narrow(0, rank * 2, 2).sum().item<int64_t>() +
                               routed[1][index].narrow(0, rank * 2, 2).sum().item<int64_t>();
      copies = copies && moe->member_copies().size() == 1 &&
               moe->member_copies()[0].first == received &&
               moe->member_copies()[0].second == mine[index].sum().item<int64_t>();
      ++index;
    }
    ok.emplace_back("member copies", copies);
    for (const auto& item : member.named_parameters()) {
      const std::optional<int> dim = nn::expert_parallel_dim(item.key());
      const torch::Tensor& want = grads.at(item.key());
      const int64_t n = dim ? item.value().size(0) : 0;
      const torch::Tensor slice = dim ? want.narrow(0, rank * n, n) : want;
      ok.emplace_back(item.key(),
                      (item.value().grad() - slice).abs().max().item<double>() <= 1e-6 * largest);
    }
  });
  REQUIRE(ok.size() == kMembers * (4 + grads.size()));
  for (const auto& [what, equal] : ok) {
    CAPTURE(what);
    CHECK(equal);
  }
}

TEST_CASE(
    "the measured load imbalance: the busiest expert-parallel member's copies over the mean") {
  using dtwin::rt::ExpertCount;
  // 4 experts, 2 layers, steps 1-3; step 1 left out (the warm-up step the summaries drop).
  std::vector<ExpertCount> rows;
  const auto add = [&](std::int64_t step, int layer, std::vector<std::int64_t> tokens) {
    for (int e = 0; e < 4; ++e) rows.push_back({step, layer, e, tokens[e], tokens[e]});
  };
  add(1, 0, {12, 0, 0, 0});
  add(1, 1, {12, 0, 0, 0});
  add(2, 0, {6, 2, 1, 3});  // ep 2: members hold 8 and 4 copies, 8 / 6
  add(2, 1, {3, 3, 3, 3});  // 1
  add(3, 0, {1, 1, 5, 5});  // 10 / 6
  add(3, 1, {0, 0, 0, 0});  // no copies: not a layer that routed
  CHECK(dtwin::rt::measured_load_imbalance(rows, 2, 2) ==
        Approx((8.0 / 6 + 1 + 10.0 / 6) / 3).epsilon(1e-12));
  // ep 4, each member one expert: 6 / 3, 1, 5 / 3.
  CHECK(dtwin::rt::measured_load_imbalance(rows, 4, 2) ==
        Approx((2 + 1 + 5.0 / 3) / 3).epsilon(1e-12));
  // Step 1 kept: its layers put every copy on member 0 (ρ = ep).
  CHECK(dtwin::rt::measured_load_imbalance(rows, 2, 1) ==
        Approx((2 + 2 + 8.0 / 6 + 1 + 10.0 / 6) / 5).epsilon(1e-12));
  CHECK(dtwin::rt::measured_load_imbalance(rows, 1, 2) == 0);
  CHECK(dtwin::rt::measured_load_imbalance(rows, 2, 4) == 0);
}
