// Sampled steps (SimOptions::steps): steps back to back whose compute varies as the profile's
// variation says, and whose mean is the prediction.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "models/cost/cost_model.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "models/spec/scenario_loader.hpp"
#include "sim/simulator.hpp"
#include "tests/fresh_process.hpp"

using namespace dtwin;

namespace {

// A 1F1B pipeline of `pp` stages, one rank per one-core device, over a free network (or `dp`
// one-stage replicas on such devices with pp = 1).
Scenario layout(int dp, int pp, int m) {
  return load_scenario(
      std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml",
      {"layout.dp=" + std::to_string(dp), "layout.pp=" + std::to_string(pp),
       "layout.microbatches=" + std::to_string(m), "model.n_layers=" + std::to_string(pp),
       "cluster.devices_per_node=" + std::to_string(dp * pp), "cluster.ranks_per_device=1",
       "cluster.device.cores=1", "cluster.intra_node.bandwidth=1e15",
       "cluster.intra_node.latency=0"});
}

struct Sampled {
  double mean_step = 0, step_sd = 0;
  std::vector<double> step_times;             // per step: latest end - earliest start
  std::vector<double> forward_over_profiled;  // every F's CPU time / the profiled 1 ms
};

// Simulates `steps` steps of `scenario` with F = 1 ms, B = 2 ms and `variation` on every stage.
Sampled sample(const Scenario& scenario, int steps, double variation, std::uint64_t seed = 7) {
  const std::vector<double> out = test::in_fresh_process([&] {
    const CostModel cost(scenario);
    Profile profile;
    StageSeconds stage{1e-3, 2e-3, 1e-3, 1e-3, 0};
    stage.variation = variation;
    profile.stages.assign(cost.num_stages(), stage);
    sim::SimOptions options;
    options.profile = &profile;
    options.steps = steps;
    options.seed = seed;
    const sim::SimResult result = sim::simulate(scenario, build_schedule(scenario), cost, options);
    std::map<int, std::pair<double, double>> spans;  // step -> (earliest start, latest end)
    std::vector<double> forwards;
    for (const trace::TimedAction& e : result.events) {
      auto [it, fresh] = spans.try_emplace(e.step, e.start, e.end);
      it->second = {std::min(it->second.first, e.start), std::max(it->second.second, e.end)};
      if (e.action.kind == sched::ActionKind::F) forwards.push_back(e.cpu / 1e-3);
    }
    std::vector<double> values{result.summary.step_time_s, result.summary.step_time_std_s,
                               static_cast<double>(spans.size())};
    for (const auto& [step, span] : spans) values.push_back(span.second - span.first);
    values.insert(values.end(), forwards.begin(), forwards.end());
    return values;
  });
  Sampled s{out[0], out[1]};
  const auto n = static_cast<std::size_t>(out[2]);
  s.step_times.assign(out.begin() + 3, out.begin() + 3 + n);
  s.forward_over_profiled.assign(out.begin() + 3 + n, out.end());
  return s;
}

}  // namespace

TEST_CASE("sampled steps without variation repeat the deterministic step") {
  const Scenario pipe = layout(1, 4, 8);
  const Sampled one = sample(pipe, 1, 0);
  const Sampled four = sample(pipe, 4, 0);
  CHECK(one.mean_step == Approx(3e-3 * (8 + 4 - 1)).epsilon(0.005));  // 1F1B closed form
  REQUIRE(four.step_times.size() == 4);
  for (double step : four.step_times) CHECK(step == Approx(one.mean_step).epsilon(1e-9));
  CHECK(four.mean_step == Approx(one.mean_step).epsilon(1e-9));
  CHECK(four.step_sd == Approx(0).margin(1e-12));
}

TEST_CASE("varying compute lengthens the mean step where actions wait for the later of two") {
  const double v = 0.2;
  for (const auto& [name, scenario] :
       {std::pair{"1F1B, 4 stages, 8 microbatches", layout(1, 4, 8)},
        std::pair{"two replicas meeting at the all-reduce", layout(2, 1, 4)}}) {
    INFO(name);
    const double deterministic_step = sample(scenario, 1, v).mean_step;
    const Sampled sampled = sample(scenario, 400, v);
    REQUIRE(sampled.step_times.size() == 400);
    // Each F's factor is log-normal of mean 1 and coefficient of variation v.
    double sum = 0, squares = 0;
    for (double x : sampled.forward_over_profiled) sum += x, squares += x * x;
    const double n = static_cast<double>(sampled.forward_over_profiled.size());
    const double mean = sum / n;
    CHECK(mean == Approx(1).epsilon(0.02));
    CHECK(std::sqrt(squares / n - mean * mean) / mean == Approx(v).epsilon(0.1));
    // The steps differ, and their mean exceeds the deterministic step by far more than its
    // standard error (sd / 20).
    CHECK(sampled.step_sd > 0.02 * deterministic_step);
    CHECK(sampled.mean_step > deterministic_step + 5 * sampled.step_sd / 20);
  }
}

TEST_CASE("sampled steps are reproducible from their seed") {
  const Scenario pipe = layout(1, 2, 4);
  const Sampled a = sample(pipe, 8, 0.1, 11), b = sample(pipe, 8, 0.1, 11);
  const Sampled c = sample(pipe, 8, 0.1, 12);
  CHECK(a.step_times == b.step_times);
  CHECK(a.step_times != c.step_times);
}

TEST_CASE(
    "sharing the cores unequally spreads the passes of ranks computing at once, not the "
    "work they get done") {
  // Two dp replicas on one one-core device: 4 F of 1 ms and 4 B of 2 ms each, 24 ms of work on
  // the core per step, time-sliced (slowdown 2 with both busy).
  const Scenario two = load_scenario(
      std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml",
      {"layout.dp=2", "layout.pp=1", "layout.microbatches=4", "model.n_layers=1",
       "cluster.devices_per_node=1", "cluster.ranks_per_device=2", "cluster.device.cores=1",
       "cluster.intra_node.bandwidth=1e15", "cluster.intra_node.latency=0"});
  // The mean step time, the steps' standard deviation and the spread (sd / mean) of the F's
  // durations.
  const auto run = [&](std::vector<double> curve) {
    return test::in_fresh_process([&] {
      const CostModel cost(two);
      Profile profile;
      profile.stages.assign(cost.num_stages(), StageSeconds{1e-3, 2e-3, 1e-3, 1e-3, 0});
      profile.concurrency = {1, 2};
      profile.concurrency_variation = curve;
      sim::SimOptions options;
      options.profile = &profile;
      options.steps = 50;
      const sim::SimResult result = sim::simulate(two, build_schedule(two), cost, options);
      double sum = 0, squares = 0, n = 0;
      for (const trace::TimedAction& e : result.events)
        if (e.action.kind == sched::ActionKind::F) {
          const double d = e.end - e.start;
          sum += d, squares += d * d, ++n;
        }
      const double mean = sum / n;
      return std::vector<double>{result.summary.step_time_s, result.summary.step_time_std_s,
                                 std::sqrt(std::max(0.0, squares / n - mean * mean)) / mean};
    });
  };
  const std::vector<double> fair = run({});
  const std::vector<double> unequal = run({0.02, 0.3});
  CHECK(fair[2] < 0.01);    // fair sharing: every F alike
  CHECK(unequal[2] > 0.1);  // unequal shares: a spread near the curve's
  // The core does the same work in every step: no step is longer or shorter.
  CHECK(fair[0] == Approx(24e-3).epsilon(0.02));
  CHECK(unequal[0] == Approx(fair[0]).epsilon(0.02));
  CHECK(unequal[1] < 0.01 * unequal[0]);
}
