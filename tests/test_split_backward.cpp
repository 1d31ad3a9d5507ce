// The split backward of zero-bubble schedules: B equals I then W, parameter by parameter.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <thread>

#include "models/nn/split_linear.hpp"
#include "models/nn/stage_module.hpp"
#include "tests/tiny_llama.hpp"

using dtwin::ModelSpec;
using dtwin::nn::StageModule;
using dtwin::nn::StashGuard;
using dtwin::nn::WeightGradStash;
using dtwin::test::is_split_linear;
using dtwin::test::random_tokens;
using dtwin::test::relative_error;
using dtwin::test::snapshot;
using dtwin::test::tiny_llama;

namespace {

constexpr std::uint64_t kSplitSeed = 99;
constexpr int64_t kSplitBatch = 2;
constexpr double kTolerance = 1e-6;

struct Batch {
  torch::Tensor ids, targets;
};

Batch batch(const ModelSpec& spec) {
  return {random_tokens(kSplitBatch, spec.seq_len, spec.vocab_size, 11),
          random_tokens(kSplitBatch, spec.seq_len, spec.vocab_size, 12)};
}

void check_close(const std::map<std::string, torch::Tensor>& actual,
                 const std::map<std::string, torch::Tensor>& expected) {
  for (const auto& [name, value] : actual) {
    INFO(name);
    REQUIRE(value.defined());
    REQUIRE(expected.at(name).defined());
    CHECK(relative_error(value, expected.at(name)) <= kTolerance);
  }
}

}  // namespace

TEST_CASE("split_linear matches matmul in forward and backward", "[torch][split]") {
  const torch::Tensor x = torch::randn({3, 5, 4}, torch::requires_grad());
  const torch::Tensor w = torch::randn({6, 4}, torch::requires_grad());
  const torch::Tensor x2 = x.detach().clone().requires_grad_(true);
  const torch::Tensor w2 = w.detach().clone().requires_grad_(true);
  dtwin::nn::StashSlot slot;
  const torch::Tensor y = dtwin::nn::split_linear(x, w, slot);
  const torch::Tensor y2 = torch::matmul(x2, w2.t());
  CHECK(torch::allclose(y, y2));
  const torch::Tensor g = torch::randn({3, 5, 6});
  y.backward(g);
  y2.backward(g);
  CHECK(torch::allclose(x.grad(), x2.grad(), 1e-5, 1e-6));
  CHECK(torch::allclose(w.grad(), w2.grad(), 1e-5, 1e-6));
}

TEST_CASE("StashGuard nests and restores the active stash", "[torch][split]") {
  WeightGradStash outer, inner;
  dtwin::nn::StashSlot slot;
  {
    StashGuard a(slot, &outer);
    CHECK(slot.active == &outer);
    {
      StashGuard b(slot, &inner);
      CHECK(slot.active == &inner);
      StashGuard none(slot, nullptr);
      CHECK(slot.active == nullptr);
    }
    CHECK(slot.active == &outer);
  }
  CHECK(slot.active == nullptr);
}

// LibTorch's autograd engine runs CUDA tensors' backward functions on its device threads, not
// on the thread that armed the stash: the stash must reach them through the slot.
TEST_CASE("the stash reaches a backward run on another thread", "[torch][split]") {
  const ModelSpec spec = tiny_llama();
  const Batch data = batch(spec);
  StageModule split(spec, 0, 4, true, true, kSplitSeed);
  WeightGradStash stash;
  const torch::Tensor loss = split.forward(data.ids, data.targets);
  StashGuard guard(split.stash_slot(), &stash);
  std::thread([&] { loss.backward(); }).join();
  CHECK(stash.size() == 4 * 7 + 1);
  for (const auto& [name, grad] : snapshot(split, true))
    if (is_split_linear(name)) {
      INFO(name);
      CHECK_FALSE(grad.defined());
    }
}

TEST_CASE("I then W gives the gradients of B on the whole model", "[torch][split]") {
  const ModelSpec spec = tiny_llama();
  const Batch data = batch(spec);

  StageModule full(spec, 0, 4, true, true, kSplitSeed);
  full.forward(data.ids, data.targets).backward();
  const auto expected = snapshot(full, /*grads=*/true);

  StageModule split(spec, 0, 4, true, true, kSplitSeed);
  WeightGradStash stash;
  const torch::Tensor loss = split.forward(data.ids, data.targets);
  {
    StashGuard guard(split.stash_slot(), &stash);
    loss.backward();
  }
  CHECK(stash.size() == 4 * 7 + 1);  // q, k, v, o, w1, w2, w3 per layer and the head
  for (const auto& [name, grad] : snapshot(split, true)) {
    INFO(name);
    if (is_split_linear(name)) {
      CHECK_FALSE(grad.defined());
    } else {
      REQUIRE(grad.defined());  // norms and the embedding get theirs during I
      CHECK(relative_error(grad, expected.at(name)) <= kTolerance);
    }
  }
  stash.apply();
  CHECK(stash.empty());
  check_close(snapshot(split, true), expected);
}

TEST_CASE("I then W through two stages gives the gradients of B", "[torch][split]") {
  const ModelSpec spec = tiny_llama();
  const Batch data = batch(spec);

  StageModule full(spec, 0, 4, true, true, kSplitSeed);
  full.forward(data.ids, data.targets).backward();
  const auto expected = snapshot(full, true);

  // Reference input gradient of the last stage: a plain B on a two-stage copy.
  StageModule first_b(spec, 0, 2, true, false, kSplitSeed);
  StageModule last_b(spec, 2, 2, false, true, kSplitSeed);
  const torch::Tensor boundary_b = first_b.forward(data.ids).detach().requires_grad_(true);
  last_b.forward(boundary_b, data.targets).backward();
  const torch::Tensor expected_input_grad = boundary_b.grad().clone();

  StageModule first(spec, 0, 2, true, false, kSplitSeed);
  StageModule last(spec, 2, 2, false, true, kSplitSeed);
  const torch::Tensor hidden = first.forward(data.ids);
  const torch::Tensor boundary = hidden.detach().requires_grad_(true);
  const torch::Tensor loss = last.forward(boundary, data.targets);

  WeightGradStash last_stash, first_stash;
  {
    StashGuard guard(last.stash_slot(), &last_stash);  // I of the last stage
    loss.backward();
  }
  REQUIRE(boundary.grad().defined());
  CHECK(relative_error(boundary.grad(), expected_input_grad) <= kTolerance);
  for (const auto& [name, grad] : snapshot(last, true))
    if (is_split_linear(name)) {
      INFO(name);
      CHECK_FALSE(grad.defined());
    }

  {
    StashGuard guard(first.stash_slot(),
                     &first_stash);  // I of the first stage, before the last stage's W
    hidden.backward(boundary.grad());
  }
  for (const auto& [name, grad] : snapshot(first, true))
    if (is_split_linear(name)) {
      INFO(name);
      CHECK_FALSE(grad.defined());
    }
  CHECK(first_stash.size() == 2 * 7);
  CHECK(last_stash.size() == 2 * 7 + 1);

  first_stash.apply();  // W in the other order
  last_stash.apply();
  check_close(snapshot(first, true), expected);
  check_close(snapshot(last, true), expected);
}

TEST_CASE("W accumulates into existing gradients like B does", "[torch][split]") {
  const ModelSpec spec = tiny_llama();
  const Batch data = batch(spec);

  StageModule full(spec, 0, 4, true, true, kSplitSeed);
  for (int microbatch = 0; microbatch < 2; ++microbatch)
    full.forward(data.ids, data.targets).backward();
  const auto expected = snapshot(full, true);

  StageModule split(spec, 0, 4, true, true, kSplitSeed);
  split.forward(data.ids, data.targets).backward();  // microbatch 0: B
  WeightGradStash stash;
  {
    const torch::Tensor loss = split.forward(data.ids, data.targets);  // microbatch 1: I, W
    StashGuard guard(split.stash_slot(), &stash);
    loss.backward();
  }
  stash.apply();
  check_close(snapshot(split, true), expected);
}
