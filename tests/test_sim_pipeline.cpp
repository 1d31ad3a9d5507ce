// Simulated pipelines against closed forms: with uniform stages and a free network the bubble
// fraction is (pp-1)/(m+pp-1) for GPipe and 1F1B and (pp-1)/(v·m+pp-1) for interleaved 1F1B
// (Narayanan et al. 2021, eq. 1 and §2.2.2); memory follows the schedule's in-flight count.
#include <catch2/catch.hpp>

#include "cli/scenario_schedule.hpp"
#include "models/cost_model.hpp"
#include "models/scenario_loader.hpp"
#include "models/schedule_memory.hpp"
#include "sim/simulator.hpp"
#include "tests/fresh_process.hpp"

using namespace dtwin;

namespace {

Scenario pipeline(const std::string& schedule, int pp, int m, int v) {
  const std::string ranks = std::to_string(pp);
  return load_scenario(
      std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml",
      {"layout.schedule=" + schedule, "layout.pp=" + ranks,
       "layout.microbatches=" + std::to_string(m), "layout.virtual_stages=" + std::to_string(v),
       "model.n_layers=" + std::to_string(pp * v), "cluster.devices_per_node=" + ranks,
       "cluster.ranks_per_device=1", "cluster.device.cores=1", "cluster.intra_node.bandwidth=1e18",
       "cluster.intra_node.latency=0"});
}

// Every stage takes 1 ms per F, I and W and 2 ms per B; the optimizer step is free.
Profile uniform_profile(int stages) {
  Profile profile;
  profile.stages.assign(stages, StageSeconds{1e-3, 2e-3, 1e-3, 1e-3, 0});
  return profile;
}

// Simulates in a child process; returns {step time, bubble fraction}. `contention` is the
// profile's measured slowdown of compute when the device's ranks run at once.
std::vector<double> simulate_uniform(const Scenario& scenario, double contention = 1) {
  return test::in_fresh_process([&] {
    const CostModel cost(scenario);
    Profile profile = uniform_profile(cost.num_stages());
    profile.contention = contention;
    sim::SimOptions options;
    options.profile = &profile;
    const sim::SimResult result = sim::simulate(scenario, build_schedule(scenario), cost, options);
    return std::vector<double>{result.summary.step_time_s, result.summary.bubble_fraction};
  });
}

}  // namespace

TEST_CASE("GPipe and 1F1B bubble: (pp-1)/(m+pp-1)") {
  for (const char* schedule : {"gpipe", "1f1b"})
    for (auto [pp, m] : {std::pair{2, 4}, {4, 8}, {4, 16}}) {
      CAPTURE(schedule, pp, m);
      const std::vector<double> result = simulate_uniform(pipeline(schedule, pp, m, 1));
      const double step = result[0], bubble = result[1];
      CHECK(bubble == Approx(double(pp - 1) / (m + pp - 1)).epsilon(0.005));
      CHECK(step == Approx(3e-3 * (m + pp - 1)).epsilon(0.005));
    }
}

TEST_CASE("a profile's contention factor stretches every compute action, not the bubble") {
  const int pp = 2, m = 4;
  const std::vector<double> result = simulate_uniform(pipeline("1f1b", pp, m, 1), 1.5);
  CHECK(result[0] == Approx(1.5 * 3e-3 * (m + pp - 1)).epsilon(0.005));
  CHECK(result[1] == Approx(double(pp - 1) / (m + pp - 1)).epsilon(0.005));
}

TEST_CASE("interleaved 1F1B bubble: (pp-1)/(v·m+pp-1)") {
  for (auto [pp, m, v] : {std::tuple{2, 4, 2}, {4, 8, 2}, {4, 8, 3}}) {
    CAPTURE(pp, m, v);
    const double bubble = simulate_uniform(pipeline("interleaved-1f1b", pp, m, v))[1];
    CHECK(bubble == Approx(double(pp - 1) / (v * m + pp - 1)).epsilon(0.005));
  }
}

TEST_CASE("ZB-H1 bubble: a third of 1F1B's, (pp-1)/(3m+pp-1) with F = I = W") {
  const int pp = 4, m = 8;
  const double bubble = simulate_uniform(pipeline("zb-h1", pp, m, 1))[1];
  CHECK(bubble == Approx(double(pp - 1) / (3 * m + pp - 1)).epsilon(0.005));
}

TEST_CASE("activation memory follows the schedule: GPipe holds m microbatches, 1F1B pp-rank") {
  const int pp = 4, m = 8;
  for (const char* name : {"gpipe", "1f1b"}) {
    const Scenario scenario = pipeline(name, pp, m, 1);
    const CostModel cost(scenario);
    const sched::Schedule schedule = build_schedule(scenario);
    for (int rank = 0; rank < pp; ++rank) {
      const double held = peak_memory_bytes(schedule, rank, cost) - cost.static_memory_bytes(rank);
      const double expected = std::string(name) == "gpipe" ? m : pp - rank;
      CAPTURE(name, rank);
      CHECK(held / cost.stage(rank).activation_bytes == Approx(expected));
    }
  }
}

TEST_CASE("Flow collectives against Message on a hybrid DP x PP step") {
  // dp 8 x pp 2 on 8 nodes of 2 devices: gradient all-reduces cross the node links while
  // pipeline transfers use them too. The stated error of the Flow model here: under 1%.
  const Scenario scenario =
      load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml",
                    {"layout.dp=8", "layout.pp=2", "cluster.nodes=8", "cluster.devices_per_node=2",
                     "cluster.ranks_per_device=1", "cluster.inter_node.bandwidth=1GB/s"});
  auto step = [&](sim::CollectiveModel model) {
    return test::in_fresh_process([&] {
      const CostModel cost(scenario);
      sim::SimOptions options;
      options.collectives = model;
      const sim::SimResult r = sim::simulate(scenario, build_schedule(scenario), cost, options);
      return std::vector<double>{r.summary.step_time_s};
    })[0];
  };
  const double message = step(sim::CollectiveModel::Message);
  const double flow = step(sim::CollectiveModel::Flow);
  CHECK(flow == Approx(message).epsilon(0.01));
}
