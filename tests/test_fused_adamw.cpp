// FusedAdamW (runtime/fused_adamw.hpp) against LibTorch's AdamW.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <sstream>

#include "runtime/fused_adamw.hpp"

using dtwin::rt::FusedAdamW;

namespace {

const torch::optim::AdamWOptions kAdamOptions =
    torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1);

std::vector<torch::Tensor> adam_params(uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({7, 5}).requires_grad_(true), torch::randn({11}).requires_grad_(true),
          torch::randn({3}).requires_grad_(true)};
}

// Step `step`'s gradients; the last parameter gets none (the optimizer must skip it).
void set_adam_gradients(std::vector<torch::Tensor>& params, int step) {
  torch::manual_seed(1000 + step);
  for (size_t i = 0; i + 1 < params.size(); ++i)
    params[i].mutable_grad() = torch::randn_like(params[i]);
}

}  // namespace

TEST_CASE("FusedAdamW takes LibTorch AdamW's steps and keeps its state", "[torch][adamw]") {
  std::vector<torch::Tensor> reference = adam_params(1), fused = adam_params(1);
  torch::optim::AdamW plain(reference, kAdamOptions);
  FusedAdamW one_kernel(fused, kAdamOptions);
  for (int step = 0; step < 20; ++step) {
    set_adam_gradients(reference, step);
    set_adam_gradients(fused, step);
    plain.step();
    one_kernel.step();
  }
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO(i);
    CHECK(torch::allclose(fused[i], reference[i], 1e-6, 1e-7));
  }
  CHECK(torch::equal(fused.back(), adam_params(1).back()));  // no gradient: untouched
  const auto& state = static_cast<const torch::optim::AdamWParamState&>(
      *one_kernel.state().at(fused[0].unsafeGetTensorImpl()));
  CHECK(state.step() == 20);
  const auto& expected = static_cast<const torch::optim::AdamWParamState&>(
      *plain.state().at(reference[0].unsafeGetTensorImpl()));
  CHECK(torch::allclose(state.exp_avg_sq(), expected.exp_avg_sq(), 1e-6, 1e-9));
}

TEST_CASE("FusedAdamW resumes from a checkpoint of its state", "[torch][adamw]") {
  std::vector<torch::Tensor> straight = adam_params(2), resumed = adam_params(2);
  FusedAdamW through(straight, kAdamOptions);
  for (int step = 0; step < 6; ++step) {
    set_adam_gradients(straight, step);
    through.step();
  }
  // The same 6 steps as 3, a save, 2 steps to be undone, the load, and 3 more: the loaded
  // counts must replace the ones the kernel was reading.
  FusedAdamW optimizer(resumed, kAdamOptions);
  for (int step = 0; step < 3; ++step) {
    set_adam_gradients(resumed, step);
    optimizer.step();
  }
  std::stringstream saved;
  torch::save(optimizer, saved);
  std::vector<torch::Tensor> kept;
  for (const torch::Tensor& p : resumed) kept.push_back(p.detach().clone());
  for (int step = 0; step < 2; ++step) {
    set_adam_gradients(resumed, 10 + step);
    optimizer.step();
  }
  torch::load(optimizer, saved);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < resumed.size(); ++i) resumed[i].copy_(kept[i]);
  }
  for (int step = 3; step < 6; ++step) {
    set_adam_gradients(resumed, step);
    optimizer.step();
  }
  for (size_t i = 0; i < straight.size(); ++i) {
    INFO(i);
    CHECK(torch::allclose(resumed[i], straight[i], 1e-6, 1e-7));
  }
}
