// The simulated data-parallel collectives of ZeRO against their closed forms (Rajbhandari et al.
// 2020 §7: 2Ψ for DDP and ZeRO-1/2, 3Ψ for ZeRO-3, each half a ring of (N-1)·S/(N·β)), the
// tensor-parallel collectives inside F, and gradient buckets overlapped with the backward.
#include <catch2/catch.hpp>
#include <functional>
#include <map>

#include "models/cost/cost_model.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "models/spec/scenario_loader.hpp"
#include "sim/simulator.hpp"
#include "tests/fresh_process.hpp"

using namespace dtwin;

namespace {

constexpr double kBandwidth = 1e9;  // bytes/s per direction, no latency

// dp data-parallel GPUs of one node running quickstart's model in one stage, plus `sets`.
Scenario data_parallel(int dp, std::vector<std::string> sets) {
  std::vector<std::string> all{"layout.pp=1",
                               "layout.dp=" + std::to_string(dp),
                               "cluster.devices_per_node=" + std::to_string(dp),
                               "cluster.ranks_per_device=1",
                               "cluster.device.cores=1",
                               "cluster.intra_node.bandwidth=" + std::to_string(kBandwidth),
                               "cluster.intra_node.latency=0"};
  all.insert(all.end(), sets.begin(), sets.end());
  return load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml", all);
}

// Simulates with every compute action taking `compute_s` (B twice that) in a child process,
// the profile's collective figures set by `measured`; returns rank 0's exposed communication
// seconds per action kind name, and "bytes" = the stage's gradient bytes.
std::map<std::string, double> exposed_by_kind(const Scenario& scenario, double compute_s = 1e-3,
                                              const std::function<void(Profile&)>& measured = {}) {
  const std::vector<double> flat = test::in_fresh_process([&] {
    const CostModel cost(scenario);
    Profile profile;
    profile.stages.assign(cost.num_stages(),
                          StageSeconds{compute_s, 2 * compute_s, compute_s, compute_s, 0});
    if (measured) measured(profile);
    sim::SimOptions options;
    options.profile = &profile;
    const sim::SimResult result = sim::simulate(scenario, build_schedule(scenario), cost, options);
    std::vector<double> sums(4, 0);  // ALLREDUCE, REDUCE_GRAD, UNSHARD, F's inner
    for (const trace::TimedAction& e : result.events) {
      if (e.rank != 0) continue;
      if (e.action.kind == sched::ActionKind::ALLREDUCE) sums[0] += e.exposed_comm;
      if (e.action.kind == sched::ActionKind::REDUCE_GRAD) sums[1] += e.exposed_comm;
      if (e.action.kind == sched::ActionKind::UNSHARD) sums[2] += e.exposed_comm;
      if (e.action.kind == sched::ActionKind::F) sums[3] += e.exposed_comm;
    }
    sums.push_back(cost.gradient_bytes(0));
    return sums;
  });
  return {{"ALLREDUCE", flat[0]},
          {"REDUCE_GRAD", flat[1]},
          {"UNSHARD", flat[2]},
          {"F", flat[3]},
          {"bytes", flat[4]}};
}

}  // namespace

TEST_CASE("ZeRO's collectives: all-reduce 2Ψ, reduce-scatter Ψ + all-gather Ψ, ZeRO-3 3Ψ") {
  const int n = 4;
  const auto half = [](double bytes) { return (n - 1) * bytes / (n * kBandwidth); };
  for (int zero = 0; zero <= 3; ++zero) {
    CAPTURE(zero);
    const auto x = exposed_by_kind(
        data_parallel(n, {"layout.zero=" + std::to_string(zero),
                          "layout.zero3_gather=" + std::string(zero == 3 ? "stage" : "layer")}));
    const double S = x.at("bytes");
    const double all_reduce = zero == 0 ? 2 * half(S) : 0;
    const double reduce_scatter = zero > 0 ? half(S) : 0;
    const double all_gather = zero == 3 ? 2 * half(S) : zero > 0 ? half(S) : 0;
    CHECK(x.at("ALLREDUCE") == Approx(all_reduce).epsilon(0.005).margin(1e-12));
    CHECK(x.at("REDUCE_GRAD") == Approx(reduce_scatter).epsilon(0.005).margin(1e-12));
    CHECK(x.at("UNSHARD") == Approx(all_gather).epsilon(0.005).margin(1e-12));
  }
}

TEST_CASE(
    "ZeRO-3 per layer: each pass exposes one unit's gather, each microbatch one unit's "
    "reduce-scatter, the rest hidden under compute") {
  const int n = 4;
  const auto half = [](double bytes) { return (n - 1) * bytes / (n * kBandwidth); };
  const Scenario scenario = data_parallel(n, {"layout.zero=3"});  // zero3_gather layer
  const CostModel cost(scenario);
  const int units = cost.gather_units(0), m = scenario.layout.microbatches;
  REQUIRE(units == 8);  // quickstart's 6 layers, its embedding and its head
  // Passes long enough (1 s) to hide the other units' gathers and reductions.
  const auto x = exposed_by_kind(scenario, 1.0);
  const double S = x.at("bytes");  // fp32: the weights' bytes too
  CHECK(x.at("UNSHARD") == Approx(2 * m * half(S / units)).epsilon(0.005));
  CHECK(x.at("REDUCE_GRAD") == Approx(m * half(S / units)).epsilon(0.005));
}

TEST_CASE("measured all-gather and reduce-scatter curves add their own CPU work per ring step") {
  const int n = 4;
  const double S = exposed_by_kind(data_parallel(n, {"layout.zero=1"})).at("bytes");
  Profile measured;  // a fast link, Gloo's work dominating: all-gather 2 ns/B, reduce-scatter 5
  measured.p2p_bandwidth = 1e15;
  measured.allreduce_ranks = n;
  measured.allgather = {{S, (n - 1) * S / n * 2e-9}};
  measured.reduce_scatter = {{S, (n - 1) * S / n * 5e-9}};
  const auto x = exposed_by_kind(data_parallel(n, {"layout.zero=1"}), 1e-3, [&](Profile& p) {
    p.p2p_bandwidth = measured.p2p_bandwidth;
    p.allreduce_ranks = n;
    p.allgather = measured.allgather;
    p.reduce_scatter = measured.reduce_scatter;
  });
  // The profile's measured link replaces the scenario's: its time is negligible, Gloo's work is
  // all that remains.
  CHECK(x.at("UNSHARD") == Approx((n - 1) * S / n * 2e-9).epsilon(0.01));
  CHECK(x.at("REDUCE_GRAD") == Approx((n - 1) * S / n * 5e-9).epsilon(0.01));
  CHECK(x.at("REDUCE_GRAD") > x.at("UNSHARD"));
}

TEST_CASE("a tensor-parallel member's data-parallel collective works on its 1/tp of the bytes") {
  const int n = 2;
  const double S = exposed_by_kind(data_parallel(n, {})).at("bytes");
  const auto measured = [&](Profile& p) {  // a fast link: Gloo's work of 4 ns/B is all there is
    p.p2p_bandwidth = 1e15;
    p.allreduce_ranks = n;
    p.allreduce = {{S, 2 * (n - 1) * S / n * 4e-9}};
  };
  const double alone = exposed_by_kind(data_parallel(n, {}), 1e-3, measured).at("ALLREDUCE");
  CHECK(alone == Approx(2 * (n - 1) * S / n * 4e-9).epsilon(0.01));
  // tp = 2, each member on a device of its own: both members reduce their halves at once.
  const auto x = exposed_by_kind(
      data_parallel(n, {"layout.tp=2", "cluster.devices_per_node=" + std::to_string(2 * n)}), 1e-3,
      measured);
  CHECK(x.at("bytes") == S);  // the stage's gradients, all members'
  CHECK(x.at("ALLREDUCE") == Approx(alone / 2).epsilon(0.01));
}

TEST_CASE("a gradient synchronisation adds the profile's own work beside its collective") {
  const int n = 2;
  for (int zero : {0, 3}) {
    CAPTURE(zero);
    const Scenario scenario =
        data_parallel(n, {"layout.zero=" + std::to_string(zero),
                          "layout.zero3_gather=" + std::string(zero == 3 ? "stage" : "layer")});
    const std::string kind = zero == 0 ? "ALLREDUCE" : "REDUCE_GRAD";
    const double plain = exposed_by_kind(scenario).at(kind);
    REQUIRE(plain > 0);
    const double local = 0.25 * plain;  // one core per rank: it runs at full speed
    const auto x = exposed_by_kind(scenario, 1e-3, [&](Profile& p) {
      for (StageSeconds& s : p.stages) s.sync_local = local;
    });
    CHECK(x.at(kind) == Approx(plain + local).epsilon(1e-6));
    CHECK(x.at("UNSHARD") == Approx(exposed_by_kind(scenario).at("UNSHARD")).epsilon(1e-9));
  }
}

TEST_CASE("tensor-parallel all-reduces inside F: 2 per layer of 2(t-1)·T·d·bytes/(t·β)") {
  const int t = 2;
  const Scenario scenario = data_parallel(1, {"layout.tp=2", "cluster.devices_per_node=2"});
  const auto x = exposed_by_kind(scenario);
  const ModelSpec& m = scenario.model;
  const double S = double(m.seq_len) * m.d_model * 4;  // one microbatch of fp32 activations
  const double per_all_reduce = 2 * (t - 1) * S / (t * kBandwidth);
  const double layers = m.n_layers, microbatches = scenario.layout.microbatches;
  // Each layer's 2, plus the vocabulary-parallel embedding's 1, per microbatch.
  CHECK(x.at("F") == Approx((2 * layers + 1) * per_all_reduce * microbatches).epsilon(0.005));
}

TEST_CASE(
    "a profile's measured tensor-parallel collectives replace the modelled ones, off the "
    "cores that other groups then share") {
  // Two tp=2 groups (dp 2) on one 2-core CPU; F takes 1 ms, 0.4 ms of it in its collectives.
  // The profile timed F with the group's 2 members busy; with both groups computing the compute
  // part runs concurrency(4)/concurrency(2) = 2 times slower, the collectives as measured.
  const Scenario scenario =
      data_parallel(2, {"layout.tp=2", "cluster.devices_per_node=1", "cluster.ranks_per_device=4",
                        "cluster.device.cores=2"});
  const std::vector<double> f = test::in_fresh_process([&] {
    const CostModel cost(scenario);
    Profile profile;
    profile.concurrency = {1, 1, 1.5, 2};
    profile.stages.assign(1, StageSeconds{1e-3, 2e-3, 1e-3, 1e-3, 0, 0.4e-3, 0.8e-3});
    sim::SimOptions options;
    options.profile = &profile;
    const sim::SimResult result = sim::simulate(scenario, build_schedule(scenario), cost, options);
    std::vector<double> first_forward;  // seconds and exposed communication of rank 0's first F
    for (const trace::TimedAction& e : result.events)
      if (e.rank == 0 && e.action.kind == sched::ActionKind::F && first_forward.empty())
        first_forward = {e.end - e.start, e.exposed_comm};
    return first_forward;
  });
  REQUIRE(f.size() == 2);
  CHECK(f[1] == Approx(0.4e-3).epsilon(0.005));
  CHECK(f[0] == Approx(2 * 0.6e-3 + 0.4e-3).epsilon(0.005));
}

TEST_CASE("gradient buckets reduced during the last backward leave one bucket exposed") {
  // 4 buckets; each bucket's all-reduce (S/4/β at dp 2) is shorter than a quarter of the
  // backward, so only the last bucket's reduction is exposed.
  const Scenario plain = data_parallel(2, {});
  const auto blocking = exposed_by_kind(plain, 1.0);
  const double S = blocking.at("bytes");
  const double params = S / 4;
  const std::string bucket = std::to_string(params / 4 * 4 * 1.0001);  // bytes, fp32 gradients
  const auto overlapped = exposed_by_kind(
      data_parallel(2, {"layout.overlap_grad_reduce=true", "layout.bucket_size=" + bucket}), 1.0);
  CHECK(blocking.at("ALLREDUCE") == Approx(S / kBandwidth).epsilon(0.005));
  CHECK(overlapped.at("ALLREDUCE") == Approx(S / 4 / kBandwidth).epsilon(0.005));
}

TEST_CASE("a tensor-parallel group sharing a device loads it with all its members' work") {
  // quickstart's 3 pipeline ranks on one 2-core device, then the same with tp 2 (6 GPU ranks on
  // the device): the device does the same FLOPs either way, so the step takes as long (the
  // tensor-parallel all-reduces are free on an infinitely fast link).
  const auto step = [](const std::vector<std::string>& sets) {
    std::vector<std::string> all{"cluster.intra_node.bandwidth=1e15",
                                 "cluster.intra_node.latency=0"};
    all.insert(all.end(), sets.begin(), sets.end());
    const Scenario scenario =
        load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml", all);
    return test::in_fresh_process([&] {
      const CostModel cost(scenario);
      return std::vector<double>{
          sim::simulate(scenario, build_schedule(scenario), cost).summary.step_time_s};
    })[0];
  };
  const double single = step({});
  const double grouped = step({"layout.tp=2", "cluster.ranks_per_device=6"});
  CHECK(grouped == Approx(single).epsilon(0.005));
}

TEST_CASE("context parallelism reduces gradients over dp·cp: dp 1 · cp 4 all-reduces as dp 4") {
  const int n = 4;
  const auto half = [](double bytes) { return (n - 1) * bytes / (n * kBandwidth); };
  const auto x =
      exposed_by_kind(data_parallel(n, {"layout.dp=1", "layout.cp=4", "model.attention=flash"}));
  CHECK(x.at("ALLREDUCE") == Approx(2 * half(x.at("bytes"))).epsilon(0.005));
}

TEST_CASE("hybrid sharding: dp 8, dp_shard 2 holds the states of a shard group of 2") {
  // quickstart's one stage of Ψ parameters at fp32 (AdamW's 16 bytes per parameter: weights 4,
  // gradients 4, moments 8), Rajbhandari et al. 2020 §5 with N = the shard group, 2.
  for (int zero = 1; zero <= 3; ++zero) {
    CAPTURE(zero);
    const std::string z = "layout.zero=" + std::to_string(zero);
    const CostModel flat(data_parallel(8, {z})), hybrid(data_parallel(8, {z, "layout.dp_shard=2"}));
    const double psi = hybrid.stage(0).params;
    const double expected = zero == 1   ? 8 * psi + 8 * psi / 2
                            : zero == 2 ? 4 * psi + 12 * psi / 2
                                        : 16 * psi / 2;
    CHECK(hybrid.static_memory_bytes(0) == Approx(expected));
    CHECK(hybrid.static_memory_bytes(0) ==
          Approx(CostModel(data_parallel(2, {z})).static_memory_bytes(0)));
    const double flat_expected = zero == 1   ? 8 * psi + 8 * psi / 8
                                 : zero == 2 ? 4 * psi + 12 * psi / 8
                                             : 16 * psi / 8;
    CHECK(flat.static_memory_bytes(0) == Approx(flat_expected));
  }
  // ZeRO 2's unreduced gradients beyond the shard: 4Ψ·(1 − 1/2).
  const CostModel zero2(data_parallel(8, {"layout.zero=2", "layout.dp_shard=2"}));
  CHECK(zero2.gathered_gradient_bytes(0) == Approx(4 * zero2.stage(0).params / 2));
  // dp_shard = dp is plain ZeRO.
  CHECK(
      CostModel(data_parallel(8, {"layout.zero=1", "layout.dp_shard=8"})).static_memory_bytes(0) ==
      CostModel(data_parallel(8, {"layout.zero=1"})).static_memory_bytes(0));
}

TEST_CASE(
    "hybrid sharding's collectives: reduce-scatter over the shard group, all-reduce of the shard "
    "across replicas, all-gather over the shard group") {
  const int n = 4;
  // A ring half of `bytes` over `k` ranks: (k−1)·bytes/(k·β).
  const auto half = [](double bytes, int k) { return (k - 1) * bytes / (k * kBandwidth); };
  SECTION("dp 4, dp_shard 2, zero 1: shard groups {0, 1} and {2, 3}, replicas {0, 2}, {1, 3}") {
    const auto x = exposed_by_kind(data_parallel(n, {"layout.zero=1", "layout.dp_shard=2"}));
    const double S = x.at("bytes");
    CHECK(x.at("ALLREDUCE") == 0);
    CHECK(x.at("REDUCE_GRAD") == Approx(half(S, 2) + 2 * half(S / 2, 2)).epsilon(0.005));
    CHECK(x.at("UNSHARD") == Approx(half(S, 2)).epsilon(0.005));
    // = S/β, against the flat reduce-scatter's 3S/(4β)
    CHECK(x.at("REDUCE_GRAD") == Approx(S / kBandwidth).epsilon(0.005));
  }
  SECTION("dp 4, dp_shard 2, zero 3 (stage): the gathers of F and of B inside the shard group") {
    const auto x = exposed_by_kind(
        data_parallel(n, {"layout.zero=3", "layout.zero3_gather=stage", "layout.dp_shard=2"}));
    const double S = x.at("bytes");
    CHECK(x.at("REDUCE_GRAD") == Approx(half(S, 2) + 2 * half(S / 2, 2)).epsilon(0.005));
    CHECK(x.at("UNSHARD") == Approx(2 * half(S, 2)).epsilon(0.005));
  }
  SECTION("dp 4, dp_shard 1: no sharding, the whole gradients all-reduced over 4") {
    const auto x = exposed_by_kind(data_parallel(n, {"layout.zero=1", "layout.dp_shard=1"}));
    const double S = x.at("bytes");
    CHECK(x.at("REDUCE_GRAD") == Approx(2 * half(S, 4)).epsilon(0.005));
    CHECK(x.at("UNSHARD") == 0);
  }
}
