// Activation recomputation (models/nn/recompute.hpp) in the runtime's LLaMA stage: the same
// gradients as without it, fewer bytes kept by the forward (counted by the runtime's CPU
// allocator), and the deferred weight gradients of a split backward still reach the stash.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "models/cost/parallel_memory.hpp"
#include "models/nn/stage_module.hpp"
#include "runtime/cpu_tensor_memory.hpp"
#include "tests/tiny_llama.hpp"

using namespace dtwin;

namespace {

// tests/tiny_llama.hpp's model with the fused attention core the formula assumes.
ModelSpec tiny_flash_llama() {
  ModelSpec m = test::tiny_llama();
  m.attention = Attention::Flash;
  return m;
}

constexpr int64_t kSequences = 2;

struct Pass {
  double kept_bytes = 0;  ///< live after the forward (output included) minus before
  torch::Tensor input_grad;
  std::vector<torch::Tensor> grads;  ///< the parameters', in module order
  std::string output_node;           ///< name of the output's grad_fn
};

// One forward and backward of a middle stage (no embedding, no head) of every layer of
// tiny_flash_llama() with `recompute`; the
// backward splits into I and W when `split`.
Pass run(Recompute recompute, bool split = false) {
  rt::count_cpu_tensor_bytes();
  const ModelSpec m = tiny_flash_llama();
  nn::StageModule stage(m, 0, m.n_layers, false, false, 7, torch::kCPU, torch::kFloat32, recompute);
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({kSequences, m.seq_len, m.d_model}).requires_grad_(true);
  const torch::Tensor grad_out = torch::randn({kSequences, m.seq_len, m.d_model});
  Pass pass;
  const double before = static_cast<double>(rt::live_cpu_tensor_bytes());
  const torch::Tensor y = stage.forward(x);
  pass.kept_bytes = static_cast<double>(rt::live_cpu_tensor_bytes()) - before;
  pass.output_node = y.grad_fn()->name();
  nn::WeightGradStash stash;
  {
    nn::StashGuard guard(stage.stash_slot(), split ? &stash : nullptr);
    y.backward(grad_out);
  }
  if (split) {
    CHECK(stash.size() == 7u * m.n_layers);  // q, k, v, o, w1, w2, w3 of each layer
    stash.apply();
  }
  pass.input_grad = x.grad();
  for (const torch::Tensor& p : stage.parameters()) pass.grads.push_back(p.grad().clone());
  return pass;
}

void check_same_gradients(const Pass& a, const Pass& b) {
  CHECK(torch::allclose(a.input_grad, b.input_grad, 1e-5, 1e-6));
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::allclose(a.grads[i], b.grads[i], 1e-5, 1e-6));
  }
}

}  // namespace

TEST_CASE("recomputation gives the gradients of the plain backward and keeps fewer bytes") {
  const Pass none = run(Recompute::None);
  const Pass selective = run(Recompute::Selective);
  const Pass full = run(Recompute::Full);
  check_same_gradients(none, selective);
  check_same_gradients(none, full);
  CHECK(full.output_node == "RecomputeBackward");
  CHECK(none.output_node != "RecomputeBackward");
  // Full recomputation keeps each layer's input (the formula's e·sbh per layer): the first is x,
  // allocated before, the others are new, as are the output and the rotary tables (2·s·hd).
  const ModelSpec m = tiny_flash_llama();
  const LayerActivationShape shape{double(m.seq_len),
                                   kSequences,
                                   double(m.d_model),
                                   double(m.n_heads),
                                   double(m.ffn_hidden),
                                   1,
                                   false,
                                   ModelFamily::Llama};
  const double layer_input = layer_activation_bytes(shape, Recompute::Full, Attention::Flash, 4);
  const double rotary = 4.0 * 2 * m.seq_len * (m.d_model / m.n_heads);
  CHECK(full.kept_bytes == Approx(m.n_layers * layer_input + rotary).epsilon(0.01));
  CHECK(full.kept_bytes < none.kept_bytes / 4);
  // Selective drops what the attention core keeps beyond q, k and v (SDPA's output and
  // log-sum-exp), so it keeps less than none and more than full.
  CHECK(selective.kept_bytes < none.kept_bytes);
  CHECK(selective.kept_bytes > full.kept_bytes);
}

TEST_CASE("a recomputed layer's split backward defers its weight gradients to the stash") {
  check_same_gradients(run(Recompute::None), run(Recompute::Full, true));
  check_same_gradients(run(Recompute::None), run(Recompute::Selective, true));
}
