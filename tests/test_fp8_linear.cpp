// Tests of the runtime's fp8 linear layer (models/nn/fp8_linear.hpp) on the CPU, where ATen's
// _scaled_mm emulates the fp8 GEMMs of H100/H200: the scales of both recipes, the amax history,
// the products against fp32 within e4m3/e5m2's rounding, and a tiny LLaMA trained 50 steps in
// fp8 against bf16.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "models/nn/fp8_linear.hpp"
#include "models/nn/stage_module.hpp"
#include "tests/loss_curves.hpp"
#include "tests/tiny_llama.hpp"

using dtwin::Fp8Recipe;
using dtwin::nn::Fp8OperandScaling;
using dtwin::nn::quantize_fp8;

namespace {

/// ‖a − b‖ / ‖b‖ (Frobenius).
double frobenius_error(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a.to(torch::kFloat64) - b.to(torch::kFloat64)).norm() / b.to(torch::kFloat64).norm())
      .item<double>();
}

double scale_of(const std::pair<torch::Tensor, torch::Tensor>& q) {
  return q.second.item<double>();
}

}  // namespace

TEST_CASE("tensorwise fp8 scaling maps the tensor's amax to the format's largest value") {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({64, 32}) * 3;
  for (const auto& [format, fmax] :
       {std::pair{torch::kFloat8_e4m3fn, 448.0}, std::pair{torch::kFloat8_e5m2, 57344.0}}) {
    Fp8OperandScaling state;
    const auto [q, s] = quantize_fp8(x, format, state, Fp8Recipe::Tensorwise, 1);
    CHECK(q.scalar_type() == format);
    CHECK(s.item<double>() == Approx(fmax / x.abs().max().item<double>()).epsilon(1e-6));
    CHECK(q.to(torch::kFloat32).abs().max().item<double>() == fmax);
    // Round to nearest with 3 (e4m3) or 2 (e5m2) mantissa bits: relative error ≤ 2^-4 or 2^-3
    // for normal values; the Frobenius error of the whole tensor lies well inside.
    const double bound = format == torch::kFloat8_e4m3fn ? 1.0 / 16 : 1.0 / 8;
    const double error = frobenius_error(q.to(torch::kFloat32) / s, x);
    CHECK(error < bound / 2);
    CHECK(error > 0);
  }
  Fp8OperandScaling state;
  CHECK(scale_of(quantize_fp8(torch::zeros({4, 4}), torch::kFloat8_e4m3fn, state,
                              Fp8Recipe::Tensorwise, 1)) == 1.0);
}

TEST_CASE("delayed fp8 scaling takes the largest amax of the history, newest first") {
  Fp8OperandScaling state;
  const auto call = [&](double amax) {
    const torch::Tensor x = torch::tensor({amax, -amax / 2, 0.25});
    return quantize_fp8(x, torch::kFloat8_e4m3fn, state, Fp8Recipe::Delayed, 2);
  };
  CHECK(scale_of(call(1.0)) == Approx(448.0));  // empty history: the current amax
  const auto second = call(4.0);                // history [1, 0]: scaled by amax 1, saturates
  CHECK(scale_of(second) == Approx(448.0));
  CHECK(second.first.to(torch::kFloat32)[0].item<double>() == 448.0);
  CHECK(scale_of(call(2.0)) == Approx(112.0));  // history [4, 1]
  CHECK(scale_of(call(1.0)) == Approx(112.0));  // history [2, 4]
  CHECK(scale_of(call(1.0)) == Approx(224.0));  // history [1, 2]: the 4 has left
  CHECK(state.history.sizes() == torch::IntArrayRef{2});
  CHECK(state.history[0].item<double>() == 1.0);
}

TEST_CASE("the fp8 linear layer's product and gradients agree with fp32 within fp8 rounding") {
  torch::manual_seed(2);
  const torch::Tensor x = torch::randn({2, 16, 64});
  const torch::Tensor w = torch::randn({48, 64}) * 0.1;
  const torch::Tensor grad_y = torch::randn({2, 16, 48}) * 1e-3;
  for (const Fp8Recipe recipe : {Fp8Recipe::Delayed, Fp8Recipe::Tensorwise}) {
    dtwin::nn::Fp8Scaling scaling(recipe, 4);
    dtwin::nn::StashSlot slot;
    const torch::Tensor input = x.to(torch::kBFloat16).requires_grad_();
    const torch::Tensor weight = w.clone().requires_grad_();
    const torch::Tensor y = dtwin::nn::fp8_linear(input, weight, scaling, slot);
    y.backward(grad_y.to(torch::kBFloat16));
    const torch::Tensor reference = torch::matmul(x, w.t());
    CAPTURE(dtwin::kFp8RecipeNames.name(recipe));
    CHECK(y.scalar_type() == torch::kBFloat16);
    CHECK(input.grad().scalar_type() == torch::kBFloat16);
    CHECK(weight.grad().scalar_type() == torch::kFloat32);
    // e4m3 × e4m3 forward, e5m2 × e4m3 backward: each product's relative error a few percent.
    for (const auto& [got, want, bound] :
         {std::tuple{y, reference, 0.05}, std::tuple{input.grad(), torch::matmul(grad_y, w), 0.1},
          std::tuple{weight.grad(),
                     torch::matmul(grad_y.reshape({-1, 48}).t(), x.reshape({-1, 64})), 0.1}}) {
      const double error = frobenius_error(got, want);
      CAPTURE(error);
      CHECK(error < bound);
      CHECK(error > 1e-3);  // really rounded to fp8, not computed in bf16 (about 4e-3)
    }
    REQUIRE(scaling.input.history.defined() == (recipe == Fp8Recipe::Delayed));
    if (recipe == Fp8Recipe::Delayed)
      CHECK(scaling.grad_output.history[0].item<double>() ==
            Approx(grad_y.to(torch::kBFloat16).abs().max().item<double>()));
  }
}

TEST_CASE("a stash defers the fp8 layer's weight gradient, the input gradient unchanged") {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({32, 64}, torch::kBFloat16);
  const torch::Tensor w = torch::randn({32, 64}) * 0.1;
  const torch::Tensor grad_y = torch::randn({32, 32}, torch::kBFloat16);
  const auto run = [&](dtwin::nn::WeightGradStash* stash) {
    dtwin::nn::Fp8Scaling scaling(Fp8Recipe::Tensorwise, 1);
    dtwin::nn::StashSlot slot;
    const torch::Tensor input = x.clone().requires_grad_();
    const torch::Tensor weight = w.clone().requires_grad_();
    {
      dtwin::nn::StashGuard guard(slot, stash);
      dtwin::nn::fp8_linear(input, weight, scaling, slot).backward(grad_y);
    }
    if (stash != nullptr) {
      CHECK(!weight.grad().defined());
      CHECK(stash->size() == 1);
      stash->apply();
    }
    return std::pair{input.grad(), weight.grad()};
  };
  dtwin::nn::WeightGradStash stash;
  const auto [full_input, full_weight] = run(nullptr);
  const auto [split_input, split_weight] = run(&stash);
  CHECK(torch::equal(full_input, split_input));
  // W multiplies the dequantised input and the bf16 gradient: within e5m2's rounding of B's.
  CHECK(frobenius_error(split_weight, full_weight) < 0.1);
}

// The fp8 acceptance's curve test in miniature (issue 58 asks ≥ 1B parameters on an H100): a
// 4-layer LLaMA whose 28 linear layers compute in fp8 (delayed, history 16), 50 AdamW steps on
// 8 fixed batches, against bf16 with fp32 master weights.
TEST_CASE("a tiny LLaMA trains in fp8 within 1% of bf16 over 50 steps") {
  dtwin::ModelSpec spec = dtwin::test::tiny_llama();
  spec.d_model = 64;
  spec.ffn_hidden = 128;
  spec.seq_len = 32;
  const auto train = [&](bool fp8) {
    dtwin::nn::StageModule model(spec, 0, spec.n_layers, true, true, 7, torch::kCPU,
                                 torch::kFloat32, dtwin::Recompute::None, {}, torch::kBFloat16);
    if (fp8) model.use_fp8(Fp8Recipe::Delayed, 16);
    torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(3e-3));
    std::vector<double> losses;
    for (int step = 0; step < 50; ++step) {
      const std::uint64_t batch = static_cast<std::uint64_t>(step % 8);
      const torch::Tensor ids = dtwin::test::random_tokens(4, spec.seq_len, 16, 100 + batch);
      optimizer.zero_grad();
      const torch::Tensor loss = model.forward(ids, ids.roll(-1, 1));
      loss.backward();
      optimizer.step();
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  const std::vector<double> bf16 = train(false), fp8 = train(true);
  const double largest = dtwin::test::check_tracks(fp8, bf16, 0.01);
  WARN("largest relative difference " << largest);
  CHECK(largest > 0);                     // computed in fp8
  CHECK(fp8.back() < 0.8 * fp8.front());  // and it learns
}

// On an H100/H200 (bench/gpu_acceptance.sh tests; hidden from CTest): the quantisation kernel
// casts as ATen does on the CPU, both formats and recipes, and records the same amax history.
TEST_CASE("the fp8 quantisation kernel equals the CPU's cast, scale and amax history", "[.cuda]") {
  REQUIRE(torch::cuda::is_available());
  torch::manual_seed(4);
  for (const auto format : {torch::kFloat8_e4m3fn, torch::kFloat8_e5m2})
    for (const Fp8Recipe recipe : {Fp8Recipe::Delayed, Fp8Recipe::Tensorwise})
      for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
        CAPTURE(format, dtwin::kFp8RecipeNames.name(recipe), dtype);
        Fp8OperandScaling cpu, gpu;
        for (const double spread : {1.0, 30.0, 0.01}) {  // the history's scale, then the current
          const torch::Tensor x = (torch::randn({3000, 7}) * spread).to(dtype);
          const auto [q_cpu, s_cpu] = quantize_fp8(x, format, cpu, recipe, 2);
          const auto [q_gpu, s_gpu] = quantize_fp8(x.cuda(), format, gpu, recipe, 2);
          CHECK(s_gpu.cpu().item<double>() == s_cpu.item<double>());
          CHECK(torch::equal(q_gpu.cpu().to(torch::kFloat32), q_cpu.to(torch::kFloat32)));
          if (recipe == Fp8Recipe::Delayed) CHECK(torch::equal(gpu.history.cpu(), cpu.history));
        }
      }
}
