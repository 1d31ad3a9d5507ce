// Ring attention (models/nn/ring_attention.hpp) against causal attention over the whole
// sequence: cp members on threads of one Gloo group, each holding its 2 load-balanced chunks,
// must give the rows of the whole sequence's output that they hold and the same gradients of
// their queries, keys and values, with both block kernels, for multi-head and grouped-query
// attention; and each member must send exactly the closed form's bytes. A whole LLaMA split over
// cp = 2 members, and over cp = 2 × tp = 2 with sequence parallelism and grouped-query attention,
// must give the whole model's loss and, averaged over the members, its gradients.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "models/cost/context_parallel.hpp"
#include "models/nn/llama_layers.hpp"
#include "models/nn/param_init.hpp"
#include "models/nn/ring_attention.hpp"
#include "models/nn/stage_module.hpp"
#include "runtime/process_groups.hpp"
#include "tests/tiny_llama.hpp"

using namespace dtwin;

namespace {

struct WholeSequence {
  torch::Tensor q, k, v, dout, out, dq, dk, dv;
};

// Whole-sequence inputs [b, heads, s, hd] and the output's gradient, and causal attention's
// output and gradients by at::scaled_dot_product_attention's autograd.
WholeSequence attend_whole_sequence(int64_t heads, int64_t kv_heads, int64_t s) {
  torch::manual_seed(3);
  WholeSequence r;
  r.q = torch::randn({2, heads, s, 8}).requires_grad_(true);
  r.k = torch::randn({2, kv_heads, s, 8}).requires_grad_(true);
  r.v = torch::randn({2, kv_heads, s, 8}).requires_grad_(true);
  r.dout = torch::randn({2, heads, s, 8});
  r.out = nn::causal_attention(r.q, r.k, r.v, Attention::Eager);
  r.out.backward(r.dout);
  r.dq = r.q.grad();
  r.dk = r.k.grad();
  r.dv = r.v.grad();
  return r;
}

// Runs ring attention on `cp` threads and checks every member's rows against the reference.
void check_ring(int cp, int64_t heads, int64_t kv_heads, nn::RingKernel kernel) {
  const int64_t s = 8 * cp;
  const WholeSequence r = attend_whole_sequence(heads, kv_heads, s);
  const double largest =
      torch::cat({r.dq.abs().flatten(), r.dk.abs().flatten(), r.dv.abs().flatten()})
          .max()
          .item<double>();
  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<int64_t> bytes(cp);
  rt::run_as_thread_group(cp, "cp", [&](int rank, const auto& backend) {
    torch::set_num_threads(1);
    nn::ContextParallelGroup group{backend, rank, cp};
    const auto mine = [&](const torch::Tensor& t) {
      return t.detach().index_select(2, nn::context_parallel_positions(s, group));
    };
    const torch::Tensor q = mine(r.q).requires_grad_(true), k = mine(r.k).requires_grad_(true),
                        v = mine(r.v).requires_grad_(true);
    const torch::Tensor out = nn::ring_attention(q, k, v, group, kernel);
    out.backward(mine(r.dout));
    const std::lock_guard<std::mutex> lock(mutex);
    const auto near = [&](const char* what, const torch::Tensor& got, const torch::Tensor& want,
                          double tolerance) {
      const double error = (got - want).abs().max().item<double>();
      if (error > tolerance)
        failures.push_back("member " + std::to_string(rank) + " " + what + ": " +
                           std::to_string(error));
    };
    near("out", out, mine(r.out), 1e-5);
    near("dq", q.grad(), mine(r.dq), 1e-6 * largest);
    near("dk", k.grad(), mine(r.dk), 1e-6 * largest);
    near("dv", v.grad(), mine(r.dv), 1e-6 * largest);
    bytes[rank] = group.bytes_sent->load();
  });
  INFO(failures.size() << " mismatches, first: " << (failures.empty() ? "" : failures.front()));
  CHECK(failures.empty());
  // The simulator's closed form for one layer's forward and backward of this member's tokens.
  ModelSpec model = test::tiny_llama();
  model.d_model = heads * 8;
  model.n_heads = static_cast<int>(heads);
  model.n_kv_heads = static_cast<int>(kv_heads);
  LayoutSpec layout;
  layout.cp = cp;
  const double tokens = 2.0 * s / cp;  // b·s/cp
  const double want = cp_exchange_bytes(model, layout, tokens, 4, false) +
                      cp_exchange_bytes(model, layout, tokens, 4, true);
  for (int rank = 0; rank < cp; ++rank) CHECK(bytes[rank] == static_cast<int64_t>(want));
}

}  // namespace

TEST_CASE("ring attention over 2 members equals causal attention, fused kernel", "[cp]") {
  check_ring(2, 4, 4, nn::RingKernel::Fused);
}

TEST_CASE("ring attention over 3 members with grouped-query heads, fused kernel", "[cp]") {
  check_ring(3, 4, 2, nn::RingKernel::Fused);
}

TEST_CASE("ring attention over 4 members, math kernel, grouped-query heads", "[cp]") {
  check_ring(4, 4, 1, nn::RingKernel::Math);
}

TEST_CASE("context-parallel positions are the two balanced chunks", "[cp]") {
  nn::ContextParallelGroup group;
  group.size = 2;
  group.rank = 1;
  CHECK(torch::equal(nn::context_parallel_positions(8, group),
                     torch::tensor({2, 3, 4, 5}, torch::kLong)));
  group.rank = 0;
  CHECK(torch::equal(nn::context_parallel_positions(8, group),
                     torch::tensor({0, 1, 6, 7}, torch::kLong)));
  CHECK_THROWS_WITH(nn::context_parallel_positions(6, group),
                    Catch::Contains("does not split into 4 equal chunks"));
}

TEST_CASE(
    "a LLaMA split over cp=2, and over cp=2 x tp=2 with sequence parallelism and grouped-query "
    "attention, gives the whole model's loss and gradients",
    "[cp]") {
  ModelSpec spec = test::tiny_llama();
  spec.attention = Attention::Flash;
  const int tp = GENERATE(1, 2);
  spec.n_kv_heads = tp == 1 ? 0 : 2;
  constexpr int kCp = 2;
  CAPTURE(tp);
  const test::WholeModel whole = test::whole_model(spec);
  const auto& [ids, targets, loss, grads, largest] = whole;

  // Members numbered tp innermost, then cp, with a tensor-parallel group per cp index and a
  // context-parallel group per tp index, rendezvousing through one store, each member with a
  // client of its own (a client's blocking wait holds its connection).
  const auto store = rt::tcp_store("127.0.0.1", 0, true, 60);
  const int members = kCp * tp;
  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int member = 0; member < members; ++member)
    threads.emplace_back([&, member] {
      torch::set_num_threads(1);
      const int tp_index = member % tp, cp_index = member / tp;
      const c10::intrusive_ptr<c10d::Store> client =
          rt::tcp_store("127.0.0.1", store->getPort(), false, 60);
      const auto make = [&](const std::string& name, int rank, int size) {
        return rt::make_group(Backend::Gloo, client, name, rank, size, 60, {"127.0.0.1", {}});
      };
      nn::TensorParallelGroup tensor;
      if (tp > 1)
        tensor = {{make("tp/" + std::to_string(cp_index), tp_index, tp), tp_index, tp}, true};
      const nn::ContextParallelGroup context{make("cp/" + std::to_string(tp_index), cp_index, kCp),
                                             cp_index, kCp};
      nn::StageModule model(spec, 0, spec.n_layers, true, true, 5, torch::kCPU, torch::kFloat32,
                            Recompute::None, tensor, {}, {}, context);
      const torch::Tensor l = model.forward(nn::context_parallel_shard(ids, context),
                                            nn::context_parallel_shard(targets, context));
      l.backward();
      // The sequence's loss is the members' mean, its gradients the mean of theirs; under
      // sequence parallelism the norms' gradients are summed over the tensor-parallel group.
      std::vector<torch::Tensor> mean{l.detach().clone()};
      context.backend->allreduce(mean)->wait();
      for (const torch::Tensor& p : model.parameters()) {
        std::vector<torch::Tensor> g{p.grad()};
        context.backend->allreduce(g)->wait();
        p.grad().div_(kCp);
      }
      if (tp > 1)
        for (const torch::Tensor& p : model.replicated_parameters()) {
          std::vector<torch::Tensor> g{p.grad()};
          tensor.backend->allreduce(g)->wait();
        }
      const std::lock_guard<std::mutex> lock(mutex);
      const double loss_error = std::abs(mean[0].item<double>() / kCp - loss);
      if (loss_error > 1e-5 * loss)
        failures.push_back("member " + std::to_string(member) + " loss " +
                           std::to_string(loss_error));
      for (const auto& item : model.named_parameters()) {
        const std::optional<int> dim = tp > 1 ? nn::tensor_parallel_dim(item.key()) : std::nullopt;
        const torch::Tensor& want = grads.at(item.key());
        const int64_t size = dim ? item.value().size(*dim) : 0;
        const torch::Tensor slice = dim ? want.narrow(*dim, tp_index * size, size) : want;
        const double error = (item.value().grad() - slice).abs().max().item<double>();
        if (error > 1e-6 * largest)
          failures.push_back("member " + std::to_string(member) + " " + item.key() + " " +
                             std::to_string(error / largest));
      }
    });
  for (std::thread& t : threads) t.join();
  INFO(failures.size() << " mismatches, first: " << (failures.empty() ? "" : failures.front()));
  CHECK(failures.empty());
}
