// The pipeline channels of runtime/communicator.hpp over Gloo: a receive's rendezvous does not
// wait behind the receiver's own transfer the other way.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/communicator.hpp"
#include "runtime/process_groups.hpp"

using dtwin::Backend;
using dtwin::rt::Communicator;
using dtwin::rt::RankEnv;

namespace {

constexpr double kChannelWaitS = 60;           // seconds any wait may take
constexpr int64_t kGradientFloats = 32 << 20;  // floats: 128 MiB, tens of ms over loopback
constexpr int kChannelActivationTag = 1, kChannelGradientTag = 2;

}  // namespace

TEST_CASE("a pipeline receive over Gloo completes while the receiver's gradient still crosses",
          "[torch][comm]") {
  // Rank 1 sends rank 0 a large gradient, then receives an activation that rank 0 posted long
  // before. Gloo sends the activation only once rank 1's ready notice reaches rank 0. On one
  // connection that notice would follow the whole gradient, so the activation could not arrive
  // before rank 0 had the whole gradient; on a channel of its own it crosses at once (3-11 ms
  // against the gradient's 85-100 ms on a 2-core VM; on one group, 0.1 ms after the gradient).
  const auto store = dtwin::rt::tcp_store("127.0.0.1", 0, true, kChannelWaitS);
  dtwin::sched::Layout layout;
  layout.pp = 2;
  using Clock = std::chrono::steady_clock;
  std::atomic<Clock::time_point> start{}, gradient_end{}, activation_end{};
  std::atomic<bool> gradient_arrived{false}, activation_arrived{false};
  const auto rank_body = [&](int rank) {
    RankEnv env;
    env.rank = rank;
    env.world_size = env.local_world_size = 2;
    env.local_rank = rank;
    env.master_addr = "127.0.0.1";
    env.master_port = store->getPort();
    env.store_hosted_elsewhere = true;
    Communicator comm(env, layout, Backend::Gloo, kChannelWaitS);
    c10d::Backend& activations = comm.pipeline_channel(false, true);  // rank 0 to rank 1
    c10d::Backend& gradients = comm.pipeline_channel(true, false);    // rank 1 to rank 0
    std::vector<torch::Tensor> sync{torch::zeros({1})};
    if (rank == 0) {
      std::vector<torch::Tensor> gradient{torch::zeros({kGradientFloats})};
      std::vector<torch::Tensor> activation{torch::full({4}, 7.0f)};
      auto received = gradients.recv(gradient, 1, kChannelGradientTag);
      auto sent = activations.send(activation, 1, kChannelActivationTag);
      comm.world().allreduce(sync)->wait();  // both posted before rank 1 starts
      received->wait();
      gradient_end = Clock::now();
      sent->wait();
      gradient_arrived = gradient[0][kGradientFloats - 1].item<float>() == 3.0f;
    } else {
      comm.world().allreduce(sync)->wait();
      std::vector<torch::Tensor> gradient{torch::full({kGradientFloats}, 3.0f)};
      std::vector<torch::Tensor> activation{torch::zeros({4})};
      start = Clock::now();
      auto sent = gradients.send(gradient, 0, kChannelGradientTag);
      activations.recv(activation, 0, kChannelActivationTag)->wait();
      activation_end = Clock::now();
      sent->wait();
      activation_arrived = torch::equal(activation[0], torch::full({4}, 7.0f));
    }
    comm.world().allreduce(sync)->wait();  // neither leaves while the other still transfers
  };
  std::thread rank0(rank_body, 0), rank1(rank_body, 1);
  rank0.join();
  rank1.join();
  CHECK(gradient_arrived);
  CHECK(activation_arrived);
  const std::chrono::duration<double> activation = activation_end.load() - start.load(),
                                      gradient = gradient_end.load() - start.load();
  INFO("activation " << activation.count() << " s, gradient " << gradient.count() << " s");
  CHECK(activation < gradient / 2);
}
