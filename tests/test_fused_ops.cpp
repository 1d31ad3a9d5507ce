// Tests of the fused kernels (models/nn/fused_ops.hpp, runtime.fused_kernels): on the CPU, each
// fused function's values and hand-written backward against autograd through the composite
// operators, and a whole LLaMA stage with and without them. The cases tagged [.cuda] (hidden
// from CTest on a machine without a GPU; bench/gpu_acceptance.sh runs them on the H100/H200)
// compare dtwin's CUDA kernels with these CPU references.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <functional>
#include <vector>

#include "models/nn/fused_ops.hpp"
#include "models/nn/llama_layers.hpp"
#include "models/nn/stage_module.hpp"
#include "tests/tiny_llama.hpp"

using dtwin::test::relative_error;

namespace {

/// The value and the inputs' gradients of f(inputs) · upstream summed, for inputs cloned to
/// `device` and `dtype` (requires_grad), returned on the CPU in fp32.
std::vector<torch::Tensor> value_and_grads(
    const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
    const std::vector<torch::Tensor>& inputs, const torch::Tensor& upstream,
    torch::Device device = torch::kCPU, torch::ScalarType dtype = torch::kFloat32) {
  std::vector<torch::Tensor> leaves;
  for (const torch::Tensor& t : inputs) leaves.push_back(t.to(device, dtype).requires_grad_());
  const torch::Tensor y = f(leaves);
  y.backward(upstream.to(device, y.scalar_type()));
  std::vector<torch::Tensor> out{y.detach().to(torch::kCPU, torch::kFloat32)};
  for (const torch::Tensor& leaf : leaves)
    out.push_back(leaf.grad().to(torch::kCPU, torch::kFloat32));
  return out;
}

void check_close(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want,
                 double bound) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i, relative_error(got[i], want[i]));
    CHECK(relative_error(got[i], want[i]) <= bound);
  }
}

// The cases: x [b, s, n, hd] with tables; a, b of the SwiGLU; x, W, targets of the head.
struct Cases {
  torch::Tensor x, cos, sin, up_rotary;
  torch::Tensor a, b;
  torch::Tensor hidden, head, targets;
};

Cases make_cases() {
  torch::manual_seed(11);
  Cases c;
  c.x = torch::randn({2, 12, 3, 16});
  std::tie(c.cos, c.sin) = dtwin::nn::rotary_tables(12, 16, 10000.0, torch::TensorOptions());
  c.up_rotary = torch::randn({2, 12, 3, 16});
  c.a = torch::randn({4, 7, 40}) * 3;
  c.b = torch::randn({4, 7, 40});
  c.hidden = torch::randn({50, 24});
  c.head = torch::randn({97, 24}) * 0.2;
  c.targets = torch::randint(97, {50}, torch::kLong);
  return c;
}

using Body = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

Body rotary_fused(const Cases& c) {
  return [c](const std::vector<torch::Tensor>& in) {
    return dtwin::nn::fused_rotary(in[0], c.cos.to(in[0].device()), c.sin.to(in[0].device()));
  };
}
Body rotary_composite(const Cases& c) {
  return [c](const std::vector<torch::Tensor>& in) {
    return dtwin::nn::apply_rotary(in[0].transpose(1, 2), c.cos, c.sin).transpose(1, 2);
  };
}
Body swiglu_fused() {
  return [](const std::vector<torch::Tensor>& in) { return dtwin::nn::fused_swiglu(in[0], in[1]); };
}
Body swiglu_composite() {
  return [](const std::vector<torch::Tensor>& in) { return torch::silu(in[0]) * in[1]; };
}
Body head_fused(const Cases& c, std::int64_t chunk_logits) {
  return [c, chunk_logits](const std::vector<torch::Tensor>& in) {
    return dtwin::nn::fused_linear_cross_entropy(in[0], in[1], c.targets.to(in[0].device()),
                                                 chunk_logits);
  };
}
Body head_composite(const Cases& c) {
  return [c](const std::vector<torch::Tensor>& in) {
    return torch::nn::functional::cross_entropy(torch::matmul(in[0], in[1].t()), c.targets);
  };
}

}  // namespace

TEST_CASE("fused rotary embeddings and SwiGLU equal the composite operators and their autograd") {
  const Cases c = make_cases();
  check_close(value_and_grads(rotary_fused(c), {c.x}, c.up_rotary),
              value_and_grads(rotary_composite(c), {c.x}, c.up_rotary), 1e-6);
  const torch::Tensor up = torch::randn(c.a.sizes());
  check_close(value_and_grads(swiglu_fused(), {c.a, c.b}, up),
              value_and_grads(swiglu_composite(), {c.a, c.b}, up), 1e-6);
}

TEST_CASE("the fused head cross-entropy equals the logits' cross-entropy, in one chunk or many") {
  const Cases c = make_cases();
  const std::vector<torch::Tensor> want =
      value_and_grads(head_composite(c), {c.hidden, c.head}, torch::tensor(2.0));
  // 97 logits a row: the whole 50 rows, then chunks of 7 rows and one of 1 (chunk_logits 700).
  for (const std::int64_t chunk : {std::int64_t{1} << 27, std::int64_t{700}, std::int64_t{1}}) {
    CAPTURE(chunk);
    check_close(value_and_grads(head_fused(c, chunk), {c.hidden, c.head}, torch::tensor(2.0)), want,
                1e-5);
  }
  torch::NoGradGuard no_grad;  // evaluation: the loss alone
  CHECK(dtwin::nn::fused_linear_cross_entropy(c.hidden, c.head, c.targets).item<double>() ==
        Approx(want[0].item<double>()).epsilon(1e-6));
}

TEST_CASE("a LLaMA stage with fused kernels trains as the composite one: loss and gradients") {
  const dtwin::ModelSpec spec = dtwin::test::tiny_llama();
  const torch::Tensor ids = dtwin::test::random_tokens(2, spec.seq_len, spec.vocab_size, 3);
  const torch::Tensor targets = dtwin::test::random_tokens(2, spec.seq_len, spec.vocab_size, 4);
  const auto run = [&](bool fused) {
    dtwin::nn::StageModule model(spec, 0, spec.n_layers, true, true, 5);
    if (fused) model.use_fused_kernels();
    const torch::Tensor loss = model.forward(ids, targets);
    loss.backward();
    return std::pair{loss.item<double>(), dtwin::test::snapshot(model, true)};
  };
  const auto [plain_loss, plain_grads] = run(false);
  const auto [fused_loss, fused_grads] = run(true);
  CHECK(fused_loss == Approx(plain_loss).epsilon(1e-6));
  REQUIRE(fused_grads.size() == plain_grads.size());
  for (const auto& [name, grad] : plain_grads) {
    CAPTURE(name, relative_error(fused_grads.at(name), grad));
    CHECK(relative_error(fused_grads.at(name), grad) < 1e-5);
  }
}

TEST_CASE("dtwin's CUDA kernels equal their CPU references, fp32 and bf16", "[.cuda]") {
  REQUIRE(torch::cuda::is_available());
  const Cases c = make_cases();
  const torch::Device gpu(torch::kCUDA);
  const torch::Tensor up = torch::randn(c.a.sizes());
  for (const auto& [dtype, bound] :
       {std::pair{torch::kFloat32, 1e-5}, std::pair{torch::kBFloat16, 2e-2}}) {
    CAPTURE(dtype);
    // The CPU reference in the same dtype: both round their inputs and outputs alike.
    check_close(value_and_grads(rotary_fused(c), {c.x}, c.up_rotary, gpu, dtype),
                value_and_grads(rotary_fused(c), {c.x}, c.up_rotary, torch::kCPU, dtype), bound);
    check_close(value_and_grads(swiglu_fused(), {c.a, c.b}, up, gpu, dtype),
                value_and_grads(swiglu_fused(), {c.a, c.b}, up, torch::kCPU, dtype), bound);
    for (const std::int64_t chunk : {std::int64_t{1} << 27, std::int64_t{700}})
      check_close(
          value_and_grads(head_fused(c, chunk), {c.hidden, c.head}, torch::tensor(2.0), gpu, dtype),
          value_and_grads(head_fused(c, chunk), {c.hidden, c.head}, torch::tensor(2.0), torch::kCPU,
                          dtype),
          bound);
  }
}
