// Megatron's tensor-parallel blocks (models/nn/tensor_parallel.hpp) on a real Gloo group of two
// threads against the same computation unsharded: a column-parallel then row-parallel SwiGLU
// between f and g, the vocabulary-parallel embedding and the vocabulary-parallel cross-entropy
// give the unsharded outputs, and each shard's gradient is its slice of the unsharded gradient;
// so does a whole LLaMA stage module split over the group, with and without sequence
// parallelism.
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "models/nn/param_init.hpp"
#include "models/nn/stage_module.hpp"
#include "models/nn/tensor_parallel.hpp"
#include "runtime/process_groups.hpp"
#include "tests/tiny_llama.hpp"

using namespace dtwin;

namespace {

constexpr int kT = 2;  // tensor-parallel size

// Runs body(tp) on kT threads, each a member of one tensor-parallel group; Catch2's checks are
// not thread-safe, so the bodies record and the caller checks.
void on_group(const std::function<void(const nn::TensorParallelGroup&)>& body) {
  rt::run_as_thread_group(kT, "tp", [&](int rank, const c10::intrusive_ptr<c10d::Backend>& g) {
    torch::set_num_threads(1);
    body({{g, rank, kT}});
  });
}

// Equal to fp32 rounding: the sharded products sum in another order.
bool close(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a - b).abs().max().item<double>() <= 1e-6 * std::max(1.0, scale);
}

}  // namespace

TEST_CASE("f, a column-parallel SwiGLU up-projection, a row-parallel down-projection and g") {
  torch::manual_seed(1);
  const int64_t d = 16, f = 32;
  const torch::Tensor x = torch::randn({2, 5, d});
  const torch::Tensor w1 = torch::randn({f, d}), w3 = torch::randn({f, d}),
                      w2 = torch::randn({d, f});
  const torch::Tensor grad_out = torch::randn({2, 5, d});
  // Unsharded.
  const torch::Tensor xf = x.clone().requires_grad_(true);
  std::vector<torch::Tensor> full{w1.clone().requires_grad_(true), w3.clone().requires_grad_(true),
                                  w2.clone().requires_grad_(true)};
  const torch::Tensor y =
      torch::linear(torch::silu(torch::linear(xf, full[0])) * torch::linear(xf, full[1]), full[2]);
  y.backward(grad_out);
  // Sharded: w1 and w3 by rows (output features), w2 by columns (input features).
  std::mutex m;
  std::vector<bool> ok;
  on_group([&](const nn::TensorParallelGroup& tp) {
    const int64_t rows = f / kT, first = tp.rank * rows;
    const torch::Tensor xs = x.clone().requires_grad_(true);
    const torch::Tensor a = w1.narrow(0, first, rows).clone().requires_grad_(true);
    const torch::Tensor c = w3.narrow(0, first, rows).clone().requires_grad_(true);
    const torch::Tensor b = w2.narrow(1, first, rows).clone().requires_grad_(true);
    const torch::Tensor in = nn::copy_to_tensor_parallel(xs, tp);
    const torch::Tensor partial =
        torch::linear(torch::silu(torch::linear(in, a)) * torch::linear(in, c), b);
    const torch::Tensor out = nn::reduce_from_tensor_parallel(partial, tp);
    out.backward(grad_out);
    const std::lock_guard<std::mutex> lock(m);
    ok.push_back(close(out, y));
    ok.push_back(close(xs.grad(), xf.grad()));  // f summed the two halves' input gradients
    ok.push_back(close(a.grad(), full[0].grad().narrow(0, first, rows)));
    ok.push_back(close(c.grad(), full[1].grad().narrow(0, first, rows)));
    ok.push_back(close(b.grad(), full[2].grad().narrow(1, first, rows)));
  });
  REQUIRE(ok.size() == 5 * kT);
  for (size_t i = 0; i < ok.size(); ++i) {
    CAPTURE(i);
    CHECK(ok[i]);
  }
}

TEST_CASE("a group counts its collectives' seconds on whichever thread runs them") {
  std::mutex m;
  std::vector<std::pair<double, double>> counted;  // (after forward, after backward) per member
  on_group([&](const nn::TensorParallelGroup& tp) {
    const torch::Tensor x = torch::ones({64, 64}, torch::requires_grad());
    const nn::TensorParallelGroup copy = tp;  // copies share the count
    const torch::Tensor out = nn::copy_to_tensor_parallel(x, copy).sum();
    const double forward = tp.collective_seconds();  // f's forward communicates nothing
    // The backward (f's all-reduce) on another thread, as LibTorch's CUDA device threads run it.
    std::thread([&] { out.backward(); }).join();
    const std::lock_guard<std::mutex> lock(m);
    counted.emplace_back(forward, tp.collective_seconds());
  });
  REQUIRE(counted.size() == kT);
  for (const auto& [forward, backward] : counted) {
    CHECK(forward == 0);
    CHECK(backward > 0);
  }
}

TEST_CASE("the vocabulary-parallel embedding and cross-entropy equal the unsharded ones") {
  torch::manual_seed(2);
  const int64_t vocab = 12, d = 8, n = 10;
  const torch::Tensor ids = torch::randint(vocab, {2, 5}, torch::kLong);
  const torch::Tensor weight = torch::randn({vocab, d});
  const torch::Tensor logits = torch::randn({n, vocab}) * 3;
  const torch::Tensor targets = torch::randint(vocab, {n}, torch::kLong);
  const torch::Tensor grad_embedded = torch::randn({2, 5, d});
  const torch::Tensor wf = weight.clone().requires_grad_(true);
  const torch::Tensor embedded = torch::embedding(wf, ids);
  embedded.backward(grad_embedded);
  const torch::Tensor lf = logits.clone().requires_grad_(true);
  const torch::Tensor loss = torch::nn::functional::cross_entropy(lf, targets);
  loss.backward();
  std::mutex m;
  std::vector<bool> ok;
  on_group([&](const nn::TensorParallelGroup& tp) {
    const int64_t rows = vocab / kT, first = tp.rank * rows;
    const torch::Tensor ws = weight.narrow(0, first, rows).clone().requires_grad_(true);
    const torch::Tensor e = nn::vocab_parallel_embedding(ids, ws, tp);
    e.backward(grad_embedded);
    const torch::Tensor ls = logits.narrow(1, first, rows).clone().requires_grad_(true);
    const torch::Tensor l = nn::vocab_parallel_cross_entropy(ls, targets, tp);
    l.backward();
    const std::lock_guard<std::mutex> lock(m);
    ok.push_back(close(e, embedded));
    ok.push_back(close(ws.grad(), wf.grad().narrow(0, first, rows)));
    ok.push_back(close(l, loss));
    ok.push_back(close(ls.grad(), lf.grad().narrow(1, first, rows)));
  });
  REQUIRE(ok.size() == 4 * kT);
  for (size_t i = 0; i < ok.size(); ++i) {
    CAPTURE(i);
    CHECK(ok[i]);
  }
}

TEST_CASE(
    "a LLaMA stage split over tp=2 gives the unsplit loss and gradient slices, also with "
    "sequence parallelism and with grouped-query attention") {
  ModelSpec spec = test::tiny_llama();
  spec.n_kv_heads = GENERATE(0, 2);  // multi-head; 2 key/value heads, one per member
  CAPTURE(spec.kv_heads());
  const test::WholeModel whole = test::whole_model(spec);
  const auto& [ids, targets, loss, grads, largest] = whole;
  CHECK(grads.at("layers.0.attn.wk.weight").size(0) == spec.kv_heads() * 8);  // head size 8
  for (const bool sequence_parallel : {false, true}) {
    CAPTURE(sequence_parallel);
    std::mutex m;
    std::vector<std::pair<std::string, bool>> ok;
    on_group([&](const nn::TensorParallelGroup& group) {
      nn::TensorParallelGroup tp = group;
      tp.sequence_parallel = sequence_parallel;
      nn::StageModule member(spec, 0, spec.n_layers, true, true, 5, torch::kCPU, torch::kFloat32,
                             Recompute::None, tp);
      const torch::Tensor l = member.forward(ids, targets);
      l.backward();
      // Under sequence parallelism each member's norm gradients cover its half of the sequence.
      if (sequence_parallel)
        for (const torch::Tensor& p : member.replicated_parameters()) {
          std::vector<torch::Tensor> g{p.grad()};
          tp.backend->allreduce(g)->wait();
        }
      const std::lock_guard<std::mutex> lock(m);
      ok.emplace_back("loss", std::abs(l.item<double>() - loss) <= 1e-6 * std::max(1.0, loss));
      for (const auto& item : member.named_parameters()) {
        const std::optional<int> dim = nn::tensor_parallel_dim(item.key());
        const torch::Tensor& want = grads.at(item.key());
        const int64_t size = dim ? item.value().size(*dim) : 0;
        const torch::Tensor slice = dim ? want.narrow(*dim, tp.rank * size, size) : want;
        ok.emplace_back(item.key(),
                        (item.value().grad() - slice).abs().max().item<double>() <= 1e-6 * largest);
      }
    });
    REQUIRE(ok.size() == kT * (1 + grads.size()));
    for (const auto& [what, equal] : ok) {
      CAPTURE(what);
      CHECK(equal);
    }
  }
}
