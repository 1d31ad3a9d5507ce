// Gradient buckets (runtime/gradient_buckets.hpp) on a real Gloo group of two threads: the
// backward's post-accumulate hooks post every bucket before the backward returns, and finish()
// leaves each parameter with the mean of the replicas' gradients.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <mutex>

#include "runtime/gradient_buckets.hpp"
#include "runtime/process_groups.hpp"

TEST_CASE("gradient buckets are posted by the backward's hooks and end with the replicas' mean") {
  constexpr int kReplicas = 2;
  std::mutex m;
  std::vector<int> buckets, posted_by_backward, posted_before;
  std::vector<bool> mean_ok;
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
        forward(1).backward();  // an earlier microbatch: not armed, posts nothing
        const int before = gradient_buckets.posted_count();
        gradient_buckets.arm(
            [&](std::vector<torch::Tensor>& buffers) { return group->allreduce(buffers); });
        forward(1.0 + replica).backward();  // the last microbatch: the replicas' inputs differ
        const int by_backward = gradient_buckets.posted_count();
        std::vector<torch::Tensor> local;
        for (const torch::Tensor& w : weights) local.push_back(w.grad().clone());
        gradient_buckets.finish([](const auto& work) { work->wait(); }, kReplicas);
        // The expected mean: all-reduce the local gradients directly.
        bool ok = true;
        for (size_t i = 0; i < weights.size(); ++i) {
          std::vector<torch::Tensor> sum{local[i].clone()};
          group->allreduce(sum)->wait();
          ok = ok && torch::allclose(weights[i].grad(), sum[0] / kReplicas);
        }
        const std::lock_guard<std::mutex> lock(m);
        buckets.push_back(gradient_buckets.bucket_count());
        posted_before.push_back(before);
        posted_by_backward.push_back(by_backward);
        mean_ok.push_back(ok);
      });
  REQUIRE(buckets.size() == kReplicas);
  for (int r = 0; r < kReplicas; ++r) {
    CAPTURE(r);
    CHECK(buckets[r] == 3);
    CHECK(posted_before[r] == 0);
    CHECK(posted_by_backward[r] == 3);
    CHECK(mean_ok[r]);
  }
}
