// Folding identical data-parallel replicas (sim/replica_fold.hpp): the folded simulation predicts
// every rank's figures as the simulation of all replicas does, and folds only where symmetry
// holds.
#include <catch2/catch.hpp>

#include "models/cost/cost_model.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "models/spec/scenario_loader.hpp"
#include "sim/replica_fold.hpp"
#include "sim/simulator.hpp"
#include "tests/fresh_process.hpp"

using namespace dtwin;

namespace {

// LLaMA-2 7B on A100 nodes of 8 (scenarios/llama2-7b-1024gpu.yaml), resized by `sets`.
Scenario llama_7b(std::vector<std::string> sets) {
  return load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/llama2-7b-1024gpu.yaml", sets);
}

// Simulates `scenario` in a child process with the Flow collectives, folded or not; returns the
// simulated replicas, the step time, the bubble and each rank's compute, communication and idle
// seconds.
std::vector<double> simulated(const Scenario& scenario, bool fold) {
  return test::in_fresh_process([&] {
    const CostModel cost(scenario);
    sim::SimOptions options;
    options.collectives = sim::CollectiveModel::Flow;
    options.fold_replicas = fold;
    const sim::SimResult result = sim::simulate(scenario, build_schedule(scenario), cost, options);
    std::vector<double> out{static_cast<double>(result.simulated_replicas),
                            result.summary.step_time_s, result.summary.bubble_fraction};
    for (const trace::RankSummary& rank : result.summary.ranks)
      out.insert(out.end(), {rank.compute_s, rank.comm_s, rank.idle_s});
    return out;
  });
}

// The folded simulation of `scenario` simulates `replicas` replicas and predicts what the
// simulation of all of them does, to rounding.
void check_fold(const Scenario& scenario, int replicas) {
  const std::vector<double> folded = simulated(scenario, true);
  const std::vector<double> all = simulated(scenario, false);
  REQUIRE(folded.size() == all.size());
  CHECK(folded[0] == replicas);
  CHECK(all[0] == scenario.layout.dp);
  CHECK(all[1] > 0);
  for (size_t i = 1; i < all.size(); ++i) {
    CAPTURE(i);
    CHECK(folded[i] == Approx(all[i]).epsilon(1e-9).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("folded replicas: DDP buckets over 5 nodes per pipeline rank, NCCL latency") {
  // dp 40 x pp 2 on 10 nodes of 8: each pipeline rank's rings span 5 nodes; 16 replicas run.
  check_fold(llama_7b({"layout.dp=40", "layout.pp=2", "layout.microbatches=4", "cluster.nodes=10"}),
             16);
}

TEST_CASE("folded replicas: tp 2, ZeRO-1 with its parameter gather, interleaved pipeline") {
  // 4 schedule ranks per node; dp 12 spans 3 nodes per pipeline rank; 8 replicas run.
  check_fold(llama_7b({"layout.dp=12", "layout.pp=2", "layout.tp=2", "layout.zero=1",
                       "layout.schedule=interleaved-1f1b", "layout.virtual_stages=2",
                       "layout.microbatches=4", "cluster.nodes=6"}),
             8);
}

TEST_CASE("folded replicas: ZeRO-3 gathering each layer, over 3 nodes") {
  check_fold(llama_7b({"layout.dp=24", "layout.pp=1", "layout.zero=3", "layout.schedule=gpipe",
                       "layout.microbatches=2", "model.n_layers=4", "cluster.nodes=3"}),
             16);
}

TEST_CASE("replicas are folded only where symmetry holds") {
  const Scenario base = llama_7b({"layout.dp=64", "layout.pp=1", "layout.schedule=gpipe",
                                  "layout.microbatches=1", "cluster.nodes=8"});
  const auto replicas = [](const Scenario& s, sim::CollectiveModel model, int steps = 1,
                           bool profiled = false) {
    return sim::simulated_replicas(s, build_schedule(s).layout, model, steps, profiled);
  };
  const auto flow = sim::CollectiveModel::Flow;
  CHECK(replicas(base, flow) == 16);
  CHECK(replicas(base, sim::CollectiveModel::Message) == 64);
  CHECK(replicas(base, flow, 64) == 64);
  CHECK(replicas(base, flow, 1, true) == 64);
  Scenario fat_tree = base;
  fat_tree.cluster.topology = Topology::FatTree;
  CHECK(replicas(fat_tree, flow) == 64);
  Scenario gather = base;
  gather.layout.dp_sync = sched::DpSync::GatherScatter;
  CHECK(replicas(gather, flow) == 64);
  // dp 12 is not a multiple of the 8 ranks of a node; dp 16 is two nodes already.
  CHECK(replicas(
            llama_7b({"layout.dp=12", "layout.pp=2", "layout.microbatches=2", "cluster.nodes=3"}),
            flow) == 12);
  CHECK(replicas(llama_7b({"layout.dp=16", "layout.pp=1", "layout.schedule=gpipe",
                           "layout.microbatches=1", "cluster.nodes=2"}),
                 flow) == 16);
}
