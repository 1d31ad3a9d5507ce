// Mixed precision in the LibTorch stages: bf16 compute over fp32 master weights.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "models/nn/stage_module.hpp"
#include "tests/tiny_llama.hpp"

using dtwin::ModelSpec;
using dtwin::nn::StageModule;
using dtwin::nn::StashGuard;
using dtwin::nn::WeightGradStash;
using dtwin::test::random_tokens;
using dtwin::test::relative_error;
using dtwin::test::snapshot;
using dtwin::test::tiny_llama;

namespace {

constexpr std::uint64_t kMixedPrecisionSeed = 5;

StageModule bf16_stage(const ModelSpec& spec, int first, int layers, bool embedding, bool head) {
  return StageModule(spec, first, layers, embedding, head, kMixedPrecisionSeed, torch::kCPU,
                     torch::kFloat32, dtwin::Recompute::None, {}, torch::kBFloat16);
}

}  // namespace

TEST_CASE("a bf16 stage keeps fp32 weights and gradients and hands on bf16 hidden states",
          "[torch][precision]") {
  const ModelSpec spec = tiny_llama();
  const torch::Tensor ids = random_tokens(2, spec.seq_len, spec.vocab_size, 1);
  const torch::Tensor targets = random_tokens(2, spec.seq_len, spec.vocab_size, 2);
  StageModule first = bf16_stage(spec, 0, 2, true, false);
  StageModule last = bf16_stage(spec, 2, 2, false, true);
  const torch::Tensor hidden = first.forward(ids);
  CHECK(hidden.scalar_type() == torch::kBFloat16);
  const torch::Tensor boundary = hidden.detach().requires_grad_(true);
  const torch::Tensor loss = last.forward(boundary, targets);
  CHECK(loss.scalar_type() == torch::kFloat32);
  loss.backward();
  CHECK(boundary.grad().scalar_type() == torch::kBFloat16);
  hidden.backward(boundary.grad());
  for (StageModule* stage : {&first, &last})
    for (const auto& [name, grad] : snapshot(*stage, true)) {
      INFO(name);
      REQUIRE(grad.defined());
      CHECK(grad.scalar_type() == torch::kFloat32);
      CHECK(stage->named_parameters()[name].scalar_type() == torch::kFloat32);
    }
}

TEST_CASE("a bf16 stage's loss and gradients are the fp32 ones to bf16's precision",
          "[torch][precision]") {
  const ModelSpec spec = tiny_llama();
  const torch::Tensor ids = random_tokens(2, spec.seq_len, spec.vocab_size, 3);
  const torch::Tensor targets = random_tokens(2, spec.seq_len, spec.vocab_size, 4);
  StageModule fp32(spec, 0, spec.n_layers, true, true, kMixedPrecisionSeed);
  StageModule bf16 = bf16_stage(spec, 0, spec.n_layers, true, true);
  const torch::Tensor reference = fp32.forward(ids, targets);
  const torch::Tensor loss = bf16.forward(ids, targets);
  reference.backward();
  loss.backward();
  const double loss_error = std::abs(loss.item<double>() - reference.item<double>());
  CHECK(loss_error > 0);  // computed in bf16, not in fp32
  CHECK(loss_error < 1e-2 * reference.item<double>());
  const auto expected = snapshot(fp32, true);
  for (const auto& [name, grad] : snapshot(bf16, true)) {
    INFO(name);
    CHECK(relative_error(grad, expected.at(name)) < 0.1);  // bf16 has an 8-bit mantissa
  }
}

TEST_CASE("a bf16 stage's split backward gives its full backward's fp32 weight gradients",
          "[torch][precision]") {
  const ModelSpec spec = tiny_llama();
  const torch::Tensor ids = random_tokens(2, spec.seq_len, spec.vocab_size, 5);
  const torch::Tensor targets = random_tokens(2, spec.seq_len, spec.vocab_size, 6);
  StageModule full = bf16_stage(spec, 0, spec.n_layers, true, true);
  full.forward(ids, targets).backward();
  StageModule split = bf16_stage(spec, 0, spec.n_layers, true, true);
  WeightGradStash stash;
  const torch::Tensor loss = split.forward(ids, targets);
  {
    StashGuard guard(split.stash_slot(), &stash);
    loss.backward();
  }
  stash.apply();
  const auto expected = snapshot(full, true);
  for (const auto& [name, grad] : snapshot(split, true)) {
    INFO(name);
    CHECK(grad.scalar_type() == torch::kFloat32);
    CHECK(relative_error(grad, expected.at(name)) == 0);  // the same bf16 products
  }
}
