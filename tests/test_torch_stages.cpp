// The LibTorch LLaMA stage modules: split-independent init, stage composition, sanity of the loss
// and training, causality.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "models/nn/param_init.hpp"
#include "models/nn/stage_module.hpp"
#include "tests/tiny_llama.hpp"

using dtwin::ModelSpec;
using dtwin::nn::StageModule;
using dtwin::test::random_tokens;
using dtwin::test::snapshot;
using dtwin::test::tiny_llama;

namespace {

constexpr std::uint64_t kSeed = 1234;
constexpr int64_t kBatch = 2;

}  // namespace

TEST_CASE("stage modules register their parameters under global names", "[torch][stage]") {
  const ModelSpec spec = tiny_llama();
  StageModule first(spec, 0, 2, true, false, kSeed);
  StageModule last(spec, 2, 2, false, true, kSeed);
  std::set<std::string> names;
  for (const auto& item : first.named_parameters()) names.insert(item.key());
  CHECK(names.count("embed.weight") == 1);
  CHECK(names.count("layers.1.attn.wq.weight") == 1);
  CHECK(names.count("layers.1.mlp.w2.weight") == 1);
  CHECK(names.count("layers.0.attn_norm.weight") == 1);
  CHECK(names.count("head.weight") == 0);
  CHECK(names.size() == 1 + 2 * 9);
  names.clear();
  for (const auto& item : last.named_parameters()) names.insert(item.key());
  CHECK(names.count("layers.2.mlp_norm.weight") == 1);
  CHECK(names.count("layers.3.attn.wo.weight") == 1);
  CHECK(names.count("norm.weight") == 1);
  CHECK(names.count("head.weight") == 1);
  CHECK(names.count("layers.0.attn.wq.weight") == 0);
  CHECK(names.size() == 2 * 9 + 2);
  CHECK(last.named_parameters()["layers.3.mlp.w2.weight"].sizes() == torch::IntArrayRef{32, 64});
  CHECK(last.named_parameters()["head.weight"].sizes() == torch::IntArrayRef{64, 32});
}

TEST_CASE("a model cut into stages equals the single-stage model", "[torch][stage]") {
  const ModelSpec spec = tiny_llama();
  StageModule whole(spec, 0, 4, true, true, kSeed);
  StageModule first(spec, 0, 2, true, false, kSeed);
  StageModule last(spec, 2, 2, false, true, kSeed);

  const auto reference = snapshot(whole);
  std::size_t compared = 0;
  for (const StageModule* stage : {&first, &last})
    for (const auto& item : stage->named_parameters()) {
      INFO(item.key());
      REQUIRE(reference.count(item.key()) == 1);
      CHECK(torch::equal(item.value(), reference.at(item.key())));
      ++compared;
    }
  CHECK(compared == reference.size());

  const torch::Tensor ids = random_tokens(kBatch, spec.seq_len, spec.vocab_size, 1);
  const torch::Tensor targets = random_tokens(kBatch, spec.seq_len, spec.vocab_size, 2);
  const double single = whole.forward(ids, targets).item<double>();
  const torch::Tensor hidden = first.forward(ids);
  CHECK(hidden.sizes() == torch::IntArrayRef{kBatch, spec.seq_len, spec.d_model});
  const double composed = last.forward(hidden, targets).item<double>();
  CHECK(composed == Approx(single).epsilon(1e-6));
}

TEST_CASE("the convenience constructor follows the partition's stage", "[torch][stage]") {
  dtwin::Scenario scenario;
  scenario.model = tiny_llama();
  scenario.training.seed = kSeed;
  dtwin::StageLayers stage;
  stage.first_layer = 2;
  stage.num_layers = 2;
  stage.has_head = true;
  StageModule from_scenario(scenario, stage);
  StageModule direct(scenario.model, 2, 2, false, true, kSeed);
  CHECK(from_scenario.first_layer() == 2);
  CHECK(from_scenario.num_layers() == 2);
  CHECK_FALSE(from_scenario.has_embedding());
  CHECK(from_scenario.has_head());
  const auto expected = snapshot(direct);
  for (const auto& [name, value] : snapshot(from_scenario))
    CHECK(torch::equal(value, expected.at(name)));
}

TEST_CASE("the seed decides the weights", "[torch][stage][init]") {
  const ModelSpec spec = tiny_llama();
  const auto a = snapshot(StageModule(spec, 0, 4, true, true, 7));
  const auto b = snapshot(StageModule(spec, 0, 4, true, true, 7));
  const auto c = snapshot(StageModule(spec, 0, 4, true, true, 8));
  for (const auto& [name, value] : a) {
    INFO(name);
    CHECK(torch::equal(value, b.at(name)));
    if (name.find("norm.weight") == std::string::npos)
      CHECK_FALSE(torch::equal(value, c.at(name)));
    else
      CHECK(torch::equal(value, torch::ones_like(value)));
  }
  // Different parameters of one model draw from different streams.
  CHECK_FALSE(torch::equal(a.at("layers.0.attn.wq.weight"), a.at("layers.0.attn.wk.weight")));
  CHECK(dtwin::nn::parameter_seed(7, "head.weight") != dtwin::nn::parameter_seed(8, "head.weight"));
}

TEST_CASE("init follows the GPT-2 scheme", "[torch][stage][init]") {
  const ModelSpec spec = tiny_llama();
  auto params = StageModule(spec, 0, 4, true, true, kSeed).named_parameters();
  CHECK(params["embed.weight"].std().item<double>() == Approx(0.02).epsilon(0.05));
  CHECK(params["layers.0.mlp.w1.weight"].std().item<double>() == Approx(0.02).epsilon(0.1));
  const double residual = 0.02 / std::sqrt(2.0 * spec.n_layers);
  CHECK(params["layers.2.mlp.w2.weight"].std().item<double>() == Approx(residual).epsilon(0.1));
  CHECK(params["layers.2.attn.wo.weight"].std().item<double>() == Approx(residual).epsilon(0.1));
}

TEST_CASE("the initial loss is close to ln(vocab)", "[torch][stage]") {
  const ModelSpec spec = tiny_llama();
  StageModule model(spec, 0, 4, true, true, kSeed);
  const torch::Tensor ids = random_tokens(kBatch, spec.seq_len, spec.vocab_size, 3);
  const torch::Tensor targets = random_tokens(kBatch, spec.seq_len, spec.vocab_size, 4);
  const double loss = model.forward(ids, targets).item<double>();
  CHECK(loss == Approx(std::log(spec.vocab_size)).epsilon(0.1));
}

TEST_CASE("AdamW steps on one batch reduce the loss", "[torch][stage][train]") {
  const ModelSpec spec = tiny_llama();
  StageModule model(spec, 0, 4, true, true, kSeed);
  torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-2));
  const torch::Tensor ids = random_tokens(kBatch, spec.seq_len, spec.vocab_size, 5);
  const torch::Tensor targets = torch::roll(ids, -1, 1);
  double first = 0, last = 0;
  for (int step = 0; step < 10; ++step) {
    optimizer.zero_grad();
    const torch::Tensor loss = model.forward(ids, targets);
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("first " << first << ", last " << last);
  CHECK(last < 0.8 * first);
}

TEST_CASE("the hidden state at position t ignores later tokens", "[torch][stage]") {
  const ModelSpec spec = tiny_llama();
  StageModule body(spec, 0, 4, true, false, kSeed);
  const torch::Tensor ids = random_tokens(kBatch, spec.seq_len, spec.vocab_size, 6);
  for (const int64_t t : {0, 7, 14}) {
    INFO("t = " << t);
    torch::Tensor changed = ids.clone();
    changed.select(1, t + 1).add_(1).remainder_(spec.vocab_size);
    const torch::Tensor before = body.forward(ids);
    const torch::Tensor after = body.forward(changed);
    CHECK(torch::equal(before.narrow(1, 0, t + 1), after.narrow(1, 0, t + 1)));
    CHECK_FALSE(torch::allclose(before.select(1, t + 1), after.select(1, t + 1)));
  }
}

TEST_CASE("a checkpoint round-trips through torch::save and torch::load", "[torch][stage]") {
  const ModelSpec spec = tiny_llama();
  auto saved = std::make_shared<StageModule>(spec, 2, 2, false, true, 1);
  auto loaded = std::make_shared<StageModule>(spec, 2, 2, false, true, 2);
  std::stringstream buffer;
  torch::save(saved, buffer);
  torch::load(loaded, buffer);
  const auto expected = snapshot(*saved);
  for (const auto& [name, value] : snapshot(*loaded)) CHECK(torch::equal(value, expected.at(name)));
}

TEST_CASE("bad stage specifications are rejected", "[torch][stage]") {
  ModelSpec spec = tiny_llama();
  CHECK_THROWS_AS(StageModule(spec, 3, 2, false, true, 0), std::invalid_argument);
  CHECK_THROWS_AS(StageModule(spec, -1, 1, false, false, 0), std::invalid_argument);
  spec.n_heads = 3;
  CHECK_THROWS_AS(StageModule(spec, 0, 1, true, false, 0), std::invalid_argument);
  spec = tiny_llama();
  spec.family = dtwin::ModelFamily::Gpt2;
  CHECK_THROWS_AS(StageModule(spec, 0, 1, true, false, 0), std::invalid_argument);

  StageModule last(tiny_llama(), 2, 2, false, true, 0);
  const torch::Tensor hidden = torch::zeros({1, 4, 32});
  CHECK_THROWS(last.forward(hidden));  // the head needs targets
  CHECK_THROWS(
      last.forward(torch::zeros({1, 4}, torch::kLong), torch::zeros({1, 4}, torch::kLong)));
}
