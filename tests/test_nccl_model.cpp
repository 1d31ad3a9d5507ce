// NCCL's collective cost model (models/cost/nccl_model.hpp): its constants in closed form, and its
// predictions against published nccl-tests runs.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "models/cost/nccl_model.hpp"

using dtwin::nccl_collective;
using dtwin::nccl_time;
using dtwin::NcclAlgorithm;
using dtwin::NcclCollective;
using dtwin::NcclGroup;
using dtwin::NcclProtocol;

namespace {

constexpr double kUs = 1e-6;
// The intra-node bandwidth the validation scenarios give an A100 (NVLink 3, 300 GB/s per
// direction) and an H100 (NVLink 4, 450 GB/s).
constexpr double kA100Link = 300e9, kH100Link = 450e9;

}  // namespace

TEST_CASE("NCCL latencies are NCCL 2.20.3's tuning.cc sums", "[nccl]") {
  // One node of 8 GPUs: base + 2(n-1) NVLink hops for a ring all-reduce, base + 2(n/N - 1) for
  // a tree; n - 1 hops for a reduce-scatter.
  const NcclGroup node{8, 1};
  const auto latency_us = [](NcclCollective c, NcclAlgorithm a, NcclProtocol p,
                             const NcclGroup& g) {
    return nccl_time(c, a, p, 0, g, kA100Link).latency_s / kUs;
  };
  using enum NcclProtocol;
  CHECK(latency_us(NcclCollective::AllReduce, NcclAlgorithm::Ring, LL, node) ==
        Approx(6.6 + 14 * 0.6));
  CHECK(latency_us(NcclCollective::AllReduce, NcclAlgorithm::Ring, LL128, node) ==
        Approx(14.0 + 14 * 1.9));
  CHECK(latency_us(NcclCollective::AllReduce, NcclAlgorithm::Ring, Simple, node) ==
        Approx(8.4 + 14 * 3.4));
  CHECK(latency_us(NcclCollective::AllReduce, NcclAlgorithm::Tree, LL, node) ==
        Approx(6.8 + 2 * 7 * 0.6));
  CHECK(latency_us(NcclCollective::ReduceScatter, NcclAlgorithm::Ring, Simple, node) ==
        Approx(8.4 + 7 * 3.4));
  // 8 nodes of 8: a ring all-reduce counts 2N = 16 network steps at 14 us and its other 98 steps
  // at max(3.4, 3 x 1 us) within nodes, times the 1.4 plateau; a tree climbs 3 network levels.
  const NcclGroup nodes{64, 8};
  CHECK(latency_us(NcclCollective::AllReduce, NcclAlgorithm::Ring, Simple, nodes) ==
        Approx((8.4 + 110 * 3.4 + 16 * 14.0) * 1.4));
  CHECK(latency_us(NcclCollective::AllReduce, NcclAlgorithm::Tree, LL, nodes) ==
        Approx(6.8 + 2 * (7 * 0.6 + 3 * 5.0)));
  // One GPU per node: every step crosses the network.
  CHECK(latency_us(NcclCollective::AllGather, NcclAlgorithm::Ring, LL, {8, 8}) ==
        Approx(6.6 + 7 * 2.7));
  CHECK(nccl_collective(NcclCollective::AllReduce, 1e6, {1, 1}, kA100Link).seconds == 0);
  CHECK_THROWS_AS(nccl_time(NcclCollective::AllGather, NcclAlgorithm::Tree, Simple, 1, node, 1),
                  std::invalid_argument);
  CHECK_THROWS_AS(nccl_collective(NcclCollective::AllReduce, 1, {2, 3}, 1), std::invalid_argument);
}

TEST_CASE("NCCL's choice: latency dominates below the knee, bandwidth above", "[nccl]") {
  const NcclGroup node{8, 1};
  // Ring LL below a few hundred kB: its 15 us latency is most of the time.
  for (double bytes : {8.0, 1024.0, 65536.0}) {
    const dtwin::NcclTime t = nccl_collective(NcclCollective::AllReduce, bytes, node, kA100Link);
    CHECK(t.protocol == NcclProtocol::LL);
    CHECK(t.algorithm == NcclAlgorithm::Ring);
    CHECK(t.latency_s >= 0.9 * t.seconds);
    CHECK(t.seconds == Approx(15.0 * kUs).epsilon(0.15));
  }
  // Simple ring at 4 GiB: latency under 1%, the rest the ring's 2(n-1)/n · S / β.
  const double big = 4294967296.0;
  const dtwin::NcclTime t = nccl_collective(NcclCollective::AllReduce, big, node, kA100Link);
  CHECK(t.protocol == NcclProtocol::Simple);
  CHECK(t.algorithm == NcclAlgorithm::Ring);
  CHECK(t.latency_s < 0.01 * t.seconds);
  CHECK(t.seconds - t.latency_s == Approx(2.0 * 7 / 8 * big / kA100Link));
  // The chosen time never decreases with the size, and the knee (latency = half the time) lies
  // between 64 kB and 16 MB.
  double previous = 0, knee = 0;
  for (double bytes = 8; bytes <= big; bytes *= 2) {
    const dtwin::NcclTime c = nccl_collective(NcclCollective::AllReduce, bytes, node, kA100Link);
    CHECK(c.seconds >= previous);
    previous = c.seconds;
    if (knee == 0 && c.latency_s < 0.5 * c.seconds) knee = bytes;
  }
  CHECK(knee > 65536);
  CHECK(knee < 16e6);
}

// Published nccl-tests all_reduce_perf runs (out-of-place time) at latency-bound sizes, against
// the model within 25%: NCCL's tuning constants are rounded per-hop figures and nccl-tests' time
// includes the launch of each operation.
TEST_CASE("NCCL model against published nccl-tests all-reduce times", "[nccl]") {
  const auto predicted = [](double bytes, const NcclGroup& g, double link) {
    return nccl_collective(NcclCollective::AllReduce, bytes, g, link).seconds;
  };
  // 2 x A100-SXM4-40GB on NVSwitch, NCCL 2.10-era (github.com/NVIDIA/nccl issue 583,
  // 2021-10-18): 32 B in 10.14 us. Model: ring LL, 6.6 + 2 x 0.6 = 7.8 us.
  CHECK(predicted(32, {2, 1}, kA100Link) == Approx(10.14 * kUs).epsilon(0.25));
  // 8 x H20 (Hopper, NVLink 4 through NVSwitch as the HGX H100) (github.com/deepseek-ai/DeepEP
  // issue 303): 8 B in 12.49 us, 4096 B in 16.69 us. Model: ring LL, 15.0 us + bytes / 50 GB/s.
  CHECK(predicted(8, {8, 1}, kH100Link) == Approx(12.49 * kUs).epsilon(0.25));
  CHECK(predicted(4096, {8, 1}, kH100Link) == Approx(16.69 * kUs).epsilon(0.25));
}

TEST_CASE("NCCL collectives price GPU clusters, not Gloo on CUDA or CPU clusters", "[nccl]") {
  dtwin::Scenario s;
  s.cluster.device.kind = dtwin::DeviceKind::Gpu;
  CHECK(dtwin::nccl_collectives(s));  // a GPU cluster with the default runtime section
  s.runtime.backend = dtwin::Backend::Nccl;
  s.runtime.device = dtwin::RuntimeDevice::Cuda;
  CHECK(dtwin::nccl_collectives(s));
  s.runtime.backend = dtwin::Backend::Gloo;  // dtwin's runtime over Gloo on the GPUs
  CHECK_FALSE(dtwin::nccl_collectives(s));
  s.runtime.backend = dtwin::Backend::Nccl;
  s.cluster.ranks_per_device = 2;  // NCCL runs one rank per GPU
  CHECK_FALSE(dtwin::nccl_collectives(s));
  s.cluster.ranks_per_device = 1;
  s.cluster.device.kind = dtwin::DeviceKind::Cpu;
  CHECK_FALSE(dtwin::nccl_collectives(s));
  // Megatron's order: a dp group of tp-wide members spans ceil(dp·tp / node) nodes, at most dp.
  dtwin::LayoutSpec l;
  l.dp = 8;
  l.tp = 8;
  CHECK(dtwin::dp_group_nodes(l, 8) == 8);
  l.tp = 2;
  CHECK(dtwin::dp_group_nodes(l, 8) == 2);
  l.dp = 4;
  CHECK(dtwin::dp_group_nodes(l, 8) == 1);
}
