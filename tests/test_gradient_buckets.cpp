// Gradient buckets (runtime/gradient_buckets.hpp, bucket_reductions.hpp) on a real Gloo group of
// two threads: the backward's post-accumulate hooks post every bucket before the backward
// returns; all-reduced buckets leave each parameter with the replicas' mean gradient, and
// reduce-scattered ones leave each ZeRO replica its shard of it.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <mutex>

#include "models/cost/encoder_parameters.hpp"
#include "models/cost/gradient_bucket_sizes.hpp"
#include "models/nn/bert.hpp"
#include "models/nn/stage_module.hpp"
#include "runtime/bucket_reductions.hpp"
#include "runtime/gradient_buckets.hpp"
#include "runtime/process_groups.hpp"
#include "tests/tiny_llama.hpp"

namespace {

constexpr int kReplicas = 2;

// What each replica saw: buckets, posted before arming, posted by the backward, result right.
struct Seen {
  int buckets = 0, posted_before = -1, posted_by_backward = -1;
  bool result_ok = false;
};

void check_seen(const std::vector<Seen>& seen, int buckets) {
  REQUIRE(seen.size() == kReplicas);
  for (const Seen& s : seen) {
    CHECK(s.buckets == buckets);
    CHECK(s.posted_before == 0);
    CHECK(s.posted_by_backward == buckets);
    CHECK(s.result_ok);
  }
}

// The sum over the group of each replica's `tensor` (a copy).
torch::Tensor group_sum(c10d::Backend& group, const torch::Tensor& tensor) {
  std::vector<torch::Tensor> sum{tensor.clone()};
  group.allreduce(sum)->wait();
  return sum[0];
}

}  // namespace

TEST_CASE("all-reduced gradient buckets are posted by the backward's hooks and end with the mean") {
  std::mutex m;
  std::vector<Seen> seen;
  dtwin::rt::run_as_thread_group(
      kReplicas, "buckets", [&](int replica, const c10::intrusive_ptr<c10d::Backend>& group) {
        torch::set_num_threads(1);
        // Three layers of 8x8 weights; 100-element buckets hold one weight each.
        std::vector<torch::Tensor> weights;
        for (int i = 0; i < 3; ++i)
          weights.push_back(torch::full({8, 8}, 0.1 * (i + 1), torch::requires_grad()));
        dtwin::rt::GradientBuckets gradient_buckets(weights, 100);
        const auto forward = [&](double scale) {
          torch::Tensor x = torch::full({4, 8}, scale);
          for (const torch::Tensor& w : weights) x = torch::tanh(torch::matmul(x, w));
          return x.sum();
        };
        Seen s;
        forward(1).backward();  // an earlier microbatch: not armed, posts nothing
        s.posted_before = gradient_buckets.posted_count();
        gradient_buckets.arm(std::make_unique<dtwin::rt::AllReduceBuckets>(
            [&](std::vector<torch::Tensor>& buffers) { return group->allreduce(buffers); },
            kReplicas));
        forward(1.0 + replica).backward();  // the last microbatch: the replicas' inputs differ
        s.posted_by_backward = gradient_buckets.posted_count();
        std::vector<torch::Tensor> local;
        for (const torch::Tensor& w : weights) local.push_back(w.grad().clone());
        gradient_buckets.finish([](const auto& work) { work->wait(); });
        s.result_ok = true;
        for (size_t i = 0; i < weights.size(); ++i)
          s.result_ok = s.result_ok &&
                        torch::allclose(weights[i].grad(), group_sum(*group, local[i]) / kReplicas);
        s.buckets = gradient_buckets.bucket_count();
        const std::lock_guard<std::mutex> lock(m);
        seen.push_back(s);
      });
  check_seen(seen, 3);
}

TEST_CASE(
    "reduce-scattered gradient buckets leave each ZeRO 1, 2 and 3 replica the mean of its shard") {
  const dtwin::ModelSpec spec = dtwin::test::tiny_llama();
  for (int zero : {1, 2, 3}) {
    CAPTURE(zero);
    std::mutex m;
    std::vector<Seen> seen;
    dtwin::rt::run_as_thread_group(
        kReplicas, "zero-buckets",
        [&](int replica, const c10::intrusive_ptr<c10d::Backend>& group) {
          torch::set_num_threads(1);
          dtwin::nn::StageModule module(spec, 0, spec.n_layers, true, true, 5);
          dtwin::rt::ZeroStage stage(module, zero, kReplicas, replica,
                                     torch::optim::AdamWOptions(1e-3));
          // 1000-element buckets: several per layer, so parts fall on both sides of the
          // shards' boundary and some are empty.
          dtwin::rt::GradientBuckets gradient_buckets(module.parameters(), 1000);
          if (zero == 3) {
            stage.allocate_parameters();
            torch::Tensor shard = stage.parameter_shard();
            group->_allgather_base(stage.full_parameters(), shard)->wait();
          }
          stage.prepare_gradients();
          Seen s;
          s.posted_before = gradient_buckets.posted_count();
          gradient_buckets.arm(std::make_unique<dtwin::rt::ReduceScatterBuckets>(
              stage,
              [&](auto& outputs, auto& inputs) { return group->reduce_scatter(outputs, inputs); }));
          const auto ids =
              dtwin::test::random_tokens(2, spec.seq_len, spec.vocab_size, 3 + replica);
          module.forward(ids, dtwin::test::random_tokens(2, spec.seq_len, spec.vocab_size, 7))
              .backward();
          s.posted_by_backward = gradient_buckets.posted_count();
          const torch::Tensor local = stage.full_gradients().clone();
          gradient_buckets.finish([](const auto& work) { work->wait(); });
          const int64_t n = stage.shard_elements();
          const torch::Tensor want = group_sum(*group, local).narrow(0, replica * n, n) / kReplicas;
          s.result_ok = torch::allclose(stage.parameter_shard().grad(), want, 1e-5, 1e-7);
          s.buckets = gradient_buckets.bucket_count();
          const std::lock_guard<std::mutex> lock(m);
          seen.push_back(s);
        });
    REQUIRE(!seen.empty());
    CHECK(seen.front().buckets > 4);
    check_seen(seen, seen.front().buckets);
  }
}

TEST_CASE("the simulator's encoder parameter list and bucket rule are the runtime's modules'",
          "[torch]") {
  // encoder_parameter_numels (models/cost) against EncoderClassifier's parameters, and
  // gradient_bucket_sizes against GradientBuckets over them: the simulator's DP byte count of
  // gradient buckets relies on both.
  dtwin::ModelSpec spec = dtwin::test::tiny_llama();  // its sizes, as an encoder
  spec.family = GENERATE(dtwin::ModelFamily::Bert, dtwin::ModelFamily::DistilBert);
  spec.max_position_embeddings = 20;
  spec.num_labels = 3;
  dtwin::nn::EncoderClassifier encoder(dtwin::nn::encoder_config(spec), torch::TensorOptions());
  std::vector<int64_t> numels;
  for (const torch::Tensor& p : encoder->parameters()) numels.push_back(p.numel());
  CHECK(dtwin::encoder_parameter_numels(spec) == numels);
  const double bucket_elements = GENERATE(1000.0, 3000.0, 1e9);
  const dtwin::rt::GradientBuckets buckets(encoder->parameters(), bucket_elements);
  const std::vector<int> sizes = dtwin::gradient_bucket_sizes(numels, bucket_elements);
  REQUIRE(static_cast<int>(sizes.size()) == buckets.bucket_count());
  for (std::size_t b = 0; b < sizes.size(); ++b)
    CHECK(static_cast<std::size_t>(sizes[b]) == buckets.parameters(b).size());
}
