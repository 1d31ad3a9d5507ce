#include "runtime/calibrate/comm_benchmark.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <functional>

#include "runtime/calibrate/sample_statistics.hpp"
#include "runtime/clock.hpp"
#include "runtime/process_groups.hpp"
#include "runtime/rank_device.hpp"

namespace dtwin::rt {

namespace {

// Waits for `work`, and on a GPU for the stream it made wait (NCCL's wait() does not block the
// host).
void finish(const c10::intrusive_ptr<c10d::Work>& work, const torch::Device& device) {
  work->wait();
  synchronize(device);
}

// A barrier over `group` on `device`: NCCL's takes its GPU from the options.
void barrier(c10d::Backend& group, const torch::Device& device) {
  c10d::BarrierOptions options;
  if (device.is_cuda()) options.device_ids = {device.index()};
  finish(group.barrier(options), device);
}

// One receive of a `bytes` message from `peer` over `crossing`, posted by the rank that
// `starts` after the peer posted its send, as a pipeline's late receive, right after the
// starter posted a send of as many bytes to the peer over `bulk`: the receive's ready message
// leaves behind it, as 1F1B's last stage posts the next activation's receive right after it
// starts sending a gradient. Seconds from the first post to the receive's end
// on the starting rank, 0 on the peer. The peer posts its receive of the bulk message before
// the go message that starts the timing, so the bulk send never waits for its ready message.
double late_receive_seconds(c10d::Backend& bulk, c10d::Backend& crossing, int peer, bool starts,
                            double bytes) {
  enum Tag { kBulk, kCrossing, kGo };
  const auto message = [bytes] {
    return std::vector<torch::Tensor>{torch::zeros({std::max<int64_t>(1, bytes / 4)})};
  };
  std::vector<torch::Tensor> ahead = message(), late = message(), go{torch::zeros({1})};
  if (!starts) {
    const auto sent = crossing.send(late, peer, kCrossing);
    const auto received = bulk.recv(ahead, peer, kBulk);
    bulk.send(go, peer, kGo)->wait();
    sent->wait();
    received->wait();
    return 0;
  }
  bulk.recv(go, peer, kGo)->wait();
  const double start = wall_seconds();
  const auto sent = bulk.send(ahead, peer, kBulk);
  crossing.recv(late, peer, kCrossing)->wait();
  const double seconds = wall_seconds() - start;
  sent->wait();
  return seconds;
}

}  // namespace

double one_way_seconds(c10d::Backend& group, int peer, bool starts, double bytes, int repeats,
                       const torch::Device& device) {
  std::vector<torch::Tensor> buffer{
      torch::zeros({std::max<int64_t>(1, bytes / 4)}, torch::TensorOptions().device(device))};
  std::vector<double> times;
  for (int i = -2; i < repeats; ++i) {
    const double start = wall_seconds();
    if (starts) {
      finish(group.send(buffer, peer, i + 2), device);
      finish(group.recv(buffer, peer, i + 2), device);
    } else {
      finish(group.recv(buffer, peer, i + 2), device);
      finish(group.send(buffer, peer, i + 2), device);
    }
    if (i >= 0) times.push_back((wall_seconds() - start) / 2);
  }
  return median(times);
}

double late_receive_behind_seconds(c10d::Backend& bulk, c10d::Backend& crossing, int peer,
                                   bool starts, double bytes, int repeats) {
  std::vector<double> times;
  for (int i = -2; i < repeats; ++i) {
    const double seconds = late_receive_seconds(bulk, crossing, peer, starts, bytes);
    if (i >= 0) times.push_back(seconds);
  }
  return median(times);
}

std::vector<AllReducePoint> allreduce_points(c10d::Backend& group, const std::vector<double>& sizes,
                                             int repeats, const torch::Device& device) {
  std::vector<AllReducePoint> points;
  for (double bytes : sizes) {
    std::vector<torch::Tensor> buffer{
        torch::ones({std::max<int64_t>(1, bytes / 4)}, torch::TensorOptions().device(device))};
    std::vector<double> times;
    for (int i = -2; i < repeats; ++i) {
      barrier(group, device);
      const double start = wall_seconds();
      finish(group.allreduce(buffer), device);
      if (i >= 0) times.push_back(wall_seconds() - start);
    }
    points.push_back({bytes, median(times)});
  }
  return points;
}

std::vector<AllReducePoint> half_ring_points(c10d::Backend& group, const std::vector<double>& sizes,
                                             int repeats, bool gather,
                                             const torch::Device& device) {
  const int64_t n = group.getSize();
  const auto on_device = torch::TensorOptions().device(device);
  std::vector<AllReducePoint> points;
  for (double bytes : sizes) {
    const int64_t shard = std::max<int64_t>(1, static_cast<int64_t>(bytes / 4) / n);
    torch::Tensor whole = torch::ones({shard * n}, on_device);
    torch::Tensor part = torch::ones({shard}, on_device);
    std::vector<double> times;
    for (int i = -2; i < repeats; ++i) {
      barrier(group, device);
      const double start = wall_seconds();
      finish(gather ? group._allgather_base(whole, part) : group._reduce_scatter_base(part, whole),
             device);
      if (i >= 0) times.push_back(wall_seconds() - start);
    }
    points.push_back({bytes, median(times)});
  }
  return points;
}

void measure_communication(Profile& profile, double message_bytes, int allreduce_ranks,
                           const std::vector<double>& allreduce_bytes, int repeats, bool sharded,
                           const RuntimeSpec& runtime) {
  const bool gpus = runtime.device == RuntimeDevice::Cuda;
  const int visible = gpus ? visible_gpus() : 0;
  const auto nccl_fits = [&](int ranks) {
    return runtime.backend == Backend::Nccl && visible >= ranks;
  };
  // A ping-pong takes tens of microseconds: many, so that a moment of other load on the host
  // does not set the median (15 of them once measured 173 MB/s beside a busy process, not 6 GB/s).
  constexpr int kMinPingPongs = 200;
  const int pings = std::max(repeats, kMinPingPongs);
  run_as_thread_group(
      2, "p2p",
      [&](int rank, const c10::intrusive_ptr<c10d::Backend>& backend) {
        c10d::Backend& group = *backend;
        const torch::Device device = thread_group_device(gpus, rank);
        const double latency = one_way_seconds(group, 1 - rank, rank == 0, 4, pings, device);
        const double large =
            one_way_seconds(group, 1 - rank, rank == 0, message_bytes, pings, device);
        if (rank == 0) {
          profile.p2p_latency = latency;
          profile.p2p_bandwidth = message_bytes / std::max(large - latency, 1e-9);
        }
      },
      nccl_fits(2) ? Backend::Nccl : Backend::Gloo, gpus);
  profile.allreduce.clear();
  // NCCL needs a GPU per rank: on a host with fewer the curve is left out, and the simulator's
  // link model stands in for it.
  const bool measurable = runtime.backend == Backend::Gloo || nccl_fits(allreduce_ranks);
  profile.allreduce_ranks = allreduce_ranks >= 2 && measurable ? allreduce_ranks : 0;
  if (profile.allreduce_ranks == 0) return;
  profile.allgather.clear();
  profile.reduce_scatter.clear();
  run_as_thread_group(
      allreduce_ranks, "allreduce",
      [&](int rank, const c10::intrusive_ptr<c10d::Backend>& backend) {
        c10d::Backend& group = *backend;
        const torch::Device device = thread_group_device(gpus, rank);
        std::vector<AllReducePoint> points =
            allreduce_points(group, allreduce_bytes, repeats, device);
        std::vector<AllReducePoint> gathers, scatters;
        if (sharded) {
          gathers = half_ring_points(group, allreduce_bytes, repeats, true, device);
          scatters = half_ring_points(group, allreduce_bytes, repeats, false, device);
        }
        if (rank == 0) {
          profile.allreduce = std::move(points);
          profile.allgather = std::move(gathers);
          profile.reduce_scatter = std::move(scatters);
        }
      },
      runtime.backend, gpus);
}

std::vector<double> p2p_concurrency(double message_bytes, int pairs, int repeats,
                                    const RuntimeSpec& runtime) {
  const bool gpus = runtime.device == RuntimeDevice::Cuda;
  // seconds[k - 1][i]: pair i's one-way seconds with k pairs at once; each element has one
  // writer, and run_as_thread_group joins the threads before they are read.
  std::vector<std::vector<double>> seconds(pairs, std::vector<double>(pairs, 0));
  run_as_thread_group(
      2 * pairs, "p2p-concurrency",
      [&](int rank, const c10::intrusive_ptr<c10d::Backend>& backend) {
        const torch::Device device = thread_group_device(gpus, rank);
        const int pair = rank / 2;
        const bool starts = rank % 2 == 0;
        for (int k = 1; k <= pairs; ++k) {
          backend->barrier()->wait();
          if (pair >= k) continue;
          const double t =
              one_way_seconds(*backend, rank ^ 1, starts, message_bytes, repeats, device);
          if (starts) seconds[k - 1][pair] = t;
        }
      },
      Backend::Gloo, gpus);
  std::vector<double> slowdown;
  for (int k = 1; k <= pairs; ++k) {
    double sum = 0;
    for (int i = 0; i < k; ++i) sum += seconds[k - 1][i];
    slowdown.push_back(seconds[0][0] > 0 ? sum / k / seconds[0][0] : 1);
  }
  return slowdown;
}

}  // namespace dtwin::rt
