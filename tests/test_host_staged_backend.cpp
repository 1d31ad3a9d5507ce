// Gloo through host copies (runtime/host_staged_backend.hpp), as ranks on a GPU use it, and the
// GPU each local rank gets (runtime/rank_device.hpp), and the NCCL layouts the runtime refuses.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>

#include "base/user_error.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/host_staged_backend.hpp"
#include "runtime/process_groups.hpp"
#include "runtime/rank_device.hpp"
#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"

using dtwin::Backend;
using dtwin::rt::gpu_of_local_rank;
using dtwin::rt::HostStagedBackend;

namespace {

// rank r's tensor of n elements: r*100 + 0, 1, ..., n-1.
torch::Tensor ramp(int rank, int64_t n) {
  return torch::arange(n, torch::kFloat32) + 100.0 * rank;
}

}  // namespace

TEST_CASE("host-staged Gloo writes each operation's results into the caller's tensors",
          "[torch][staged]") {
  constexpr int kRanks = 2;
  dtwin::rt::run_as_thread_group(
      kRanks, "staged", [&](int rank, const c10::intrusive_ptr<c10d::Backend>& gloo) {
        HostStagedBackend group(gloo);
        const int peer = 1 - rank;

        std::vector<torch::Tensor> summed{ramp(rank, 4)};
        const torch::Tensor caller = summed[0];
        auto work = group.allreduce(summed, {});
        CHECK(torch::equal(caller, ramp(rank, 4)));  // untouched until the wait
        work->wait();
        CHECK(torch::equal(caller, ramp(0, 4) + ramp(1, 4)));

        torch::Tensor whole = torch::zeros({8}), part = ramp(rank, 4);
        group._allgather_base(whole, part, {})->wait();
        CHECK(torch::equal(whole, torch::cat({ramp(0, 4), ramp(1, 4)})));

        torch::Tensor shard = torch::zeros({4}), full = ramp(rank, 8);
        group._reduce_scatter_base(shard, full, {})->wait();
        CHECK(torch::equal(shard, (ramp(0, 8) + ramp(1, 8)).narrow(0, 4 * rank, 4)));

        std::vector<torch::Tensor> uneven{torch::zeros({rank == 0 ? 3 : 5})};
        std::vector<std::vector<torch::Tensor>> inputs{
            {ramp(rank, 8).narrow(0, 0, 3), ramp(rank, 8).narrow(0, 3, 5)}};
        group.reduce_scatter(uneven, inputs, {})->wait();
        CHECK(torch::equal(
            uneven[0], (ramp(0, 8) + ramp(1, 8)).narrow(0, rank == 0 ? 0 : 3, rank == 0 ? 3 : 5)));

        std::vector<torch::Tensor> message{ramp(rank, 6)};
        auto sent = group.send(message, peer, 7);
        std::vector<torch::Tensor> received{torch::zeros({6})};
        group.recv(received, peer, 7)->wait();
        sent->wait();
        CHECK(torch::equal(received[0], ramp(peer, 6)));

        std::vector<torch::Tensor> broadcast{ramp(rank, 3)};
        group.broadcast(broadcast, {})->wait();  // from rank 0
        CHECK(torch::equal(broadcast[0], ramp(0, 3)));

        std::vector<std::vector<torch::Tensor>> gathered;
        if (rank == 0) gathered = {{torch::zeros({2}), torch::zeros({2})}};
        std::vector<torch::Tensor> mine{ramp(rank, 2)};
        group.gather(gathered, mine, {})->wait();  // to rank 0
        if (rank == 0) {
          CHECK(torch::equal(gathered[0][0], ramp(0, 2)));
          CHECK(torch::equal(gathered[0][1], ramp(1, 2)));
        }

        std::vector<torch::Tensor> scattered{torch::zeros({2})};
        std::vector<std::vector<torch::Tensor>> pieces;
        if (rank == 0) pieces = {{ramp(5, 2), ramp(6, 2)}};
        group.scatter(scattered, pieces, {})->wait();  // from rank 0
        CHECK(torch::equal(scattered[0], ramp(5 + rank, 2)));
        group.barrier({})->wait();
      });
}

TEST_CASE("local ranks get GPUs round-robin, and NCCL refuses ranks sharing one",
          "[torch][staged]") {
  CHECK(gpu_of_local_rank(Backend::Nccl, 3, 8, 8) == 3);
  CHECK(gpu_of_local_rank(Backend::Gloo, 3, 4, 1) == 0);
  CHECK(gpu_of_local_rank(Backend::Gloo, 3, 4, 2) == 1);
  CHECK_THROWS_WITH(gpu_of_local_rank(Backend::Nccl, 0, 4, 1), Catch::Contains("runtime.backend") &&
                                                                   Catch::Contains("4 ranks") &&
                                                                   Catch::Contains("1 GPU"));
  CHECK_THROWS_WITH(gpu_of_local_rank(Backend::Gloo, 0, 1, 0),
                    Catch::Contains("runtime.device") && Catch::Contains("no GPU visible"));
  CHECK_THROWS_AS(gpu_of_local_rank(Backend::Gloo, 0, 1, 0), dtwin::UserError);
}

TEST_CASE("NCCL refuses a schedule that receives a pair's messages out of order", "[staged]") {
  dtwin::Scenario scenario;
  scenario.source = "nccl.yaml";
  scenario.runtime.backend = Backend::Nccl;
  scenario.runtime.device = dtwin::RuntimeDevice::Cuda;
  namespace sched = dtwin::sched;
  sched::Schedule schedule =
      sched::lower(sched::generate(sched::ScheduleKind::OneFOneB, {1, 2, 1, 2}));
  // Rank 1 now takes microbatch 1's activations first; Gloo would match them by tag.
  sched::ActionList& last = schedule.ranks[1];
  const auto first = std::find_if(last.begin(), last.end(), [](const sched::Action& a) {
    return a.kind == sched::ActionKind::RECV_F;
  });
  const auto second = std::find_if(std::next(first), last.end(), [](const sched::Action& a) {
    return a.kind == sched::ActionKind::RECV_F;
  });
  REQUIRE(second != last.end());
  std::iter_swap(first, second);
  CHECK_THROWS_WITH(dtwin::rt::check_runtime_supports(scenario, schedule),
                    Catch::StartsWith("nccl.yaml: runtime.backend: expected gloo") &&
                        Catch::Contains("rank 1 posts its receives from rank 0"));
  CHECK_THROWS_AS(dtwin::rt::check_runtime_supports(scenario, schedule), dtwin::UserError);
}
