#include "runtime/comm_benchmark.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <functional>

#include "runtime/clock.hpp"
#include "runtime/median.hpp"
#include "runtime/process_groups.hpp"

namespace dtwin::rt {

double one_way_seconds(c10d::Backend& group, int peer, bool starts, double bytes, int repeats) {
  std::vector<torch::Tensor> buffer{torch::zeros({std::max<int64_t>(1, bytes / 4)})};
  std::vector<double> times;
  for (int i = -2; i < repeats; ++i) {
    const double start = wall_seconds();
    if (starts) {
      group.send(buffer, peer, i + 2)->wait();
      group.recv(buffer, peer, i + 2)->wait();
    } else {
      group.recv(buffer, peer, i + 2)->wait();
      group.send(buffer, peer, i + 2)->wait();
    }
    if (i >= 0) times.push_back((wall_seconds() - start) / 2);
  }
  return median(times);
}

std::vector<AllReducePoint> allreduce_points(c10d::Backend& group, const std::vector<double>& sizes,
                                             int repeats) {
  std::vector<AllReducePoint> points;
  for (double bytes : sizes) {
    std::vector<torch::Tensor> buffer{torch::ones({std::max<int64_t>(1, bytes / 4)})};
    std::vector<double> times;
    for (int i = -2; i < repeats; ++i) {
      group.barrier()->wait();
      const double start = wall_seconds();
      group.allreduce(buffer)->wait();
      if (i >= 0) times.push_back(wall_seconds() - start);
    }
    points.push_back({bytes, median(times)});
  }
  return points;
}

std::vector<AllReducePoint> half_ring_points(c10d::Backend& group, const std::vector<double>& sizes,
                                             int repeats, bool gather) {
  const int64_t n = group.getSize();
  std::vector<AllReducePoint> points;
  for (double bytes : sizes) {
    const int64_t shard = std::max<int64_t>(1, static_cast<int64_t>(bytes / 4) / n);
    torch::Tensor whole = torch::ones({shard * n});
    torch::Tensor part = torch::ones({shard});
    std::vector<double> times;
    for (int i = -2; i < repeats; ++i) {
      group.barrier()->wait();
      const double start = wall_seconds();
      (gather ? group._allgather_base(whole, part) : group._reduce_scatter_base(part, whole))
          ->wait();
      if (i >= 0) times.push_back(wall_seconds() - start);
    }
    points.push_back({bytes, median(times)});
  }
  return points;
}

void measure_communication(Profile& profile, double message_bytes, int allreduce_ranks,
                           const std::vector<double>& allreduce_bytes, int repeats, bool sharded) {
  // A ping-pong takes tens of microseconds: many, so that a moment of other load on the host
  // does not set the median (15 of them once measured 173 MB/s beside a busy process, not 6 GB/s).
  constexpr int kMinPingPongs = 200;
  const int pings = std::max(repeats, kMinPingPongs);
  run_as_thread_group(2, "p2p", [&](int rank, const c10::intrusive_ptr<c10d::Backend>& backend) {
    c10d::Backend& group = *backend;
    const double latency = one_way_seconds(group, 1 - rank, rank == 0, 4, pings);
    const double large = one_way_seconds(group, 1 - rank, rank == 0, message_bytes, pings);
    if (rank == 0) {
      profile.p2p_latency = latency;
      profile.p2p_bandwidth = message_bytes / std::max(large - latency, 1e-9);
    }
  });
  profile.allreduce.clear();
  profile.allreduce_ranks = allreduce_ranks >= 2 ? allreduce_ranks : 0;
  if (allreduce_ranks < 2) return;
  profile.allgather.clear();
  profile.reduce_scatter.clear();
  run_as_thread_group(allreduce_ranks, "allreduce",
                      [&](int rank, const c10::intrusive_ptr<c10d::Backend>& backend) {
                        c10d::Backend& group = *backend;
                        std::vector<AllReducePoint> points =
                            allreduce_points(group, allreduce_bytes, repeats);
                        std::vector<AllReducePoint> gathers, scatters;
                        if (sharded) {
                          gathers = half_ring_points(group, allreduce_bytes, repeats, true);
                          scatters = half_ring_points(group, allreduce_bytes, repeats, false);
                        }
                        if (rank == 0) {
                          profile.allreduce = std::move(points);
                          profile.allgather = std::move(gathers);
                          profile.reduce_scatter = std::move(scatters);
                        }
                      });
}

}  // namespace dtwin::rt
