// The profiler's replay of a rank's compute actions in its schedule's order
// (runtime/calibrate/compute_replay.hpp), on a small LLaMA split into two stages.
#include <catch2/catch.hpp>
#include <filesystem>

#include "models/cost/scenario_schedule.hpp"
#include "models/spec/scenario_loader.hpp"
#include "runtime/calibrate/compute_replay.hpp"
#include "runtime/data/token_dataset.hpp"
#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"

namespace {

using dtwin::sched::ActionKind;

dtwin::Scenario small_pipeline(const std::string& schedule) {
  return dtwin::load_scenario(
      std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml",
      {"model.d_model=64", "model.n_heads=2", "model.ffn_hidden=128", "model.n_layers=2",
       "model.seq_len=32", "cluster.ranks_per_device=2", "layout.pp=2", "layout.microbatches=4",
       "layout.schedule=" + schedule});
}

dtwin::sched::Layout layout_of(const dtwin::Scenario& scenario) {
  dtwin::sched::Layout layout;
  layout.pp = scenario.layout.pp;
  layout.microbatches = scenario.layout.microbatches;
  return layout;
}

dtwin::rt::TokenDataset dataset(const dtwin::Scenario& scenario) {
  REQUIRE(std::filesystem::is_regular_file(std::string(DTWIN_DATA_DIR) + "/corpus.txt"));
  return {DTWIN_DATA_DIR, scenario.model.vocab_size, scenario.model.seq_len};
}

}  // namespace

TEST_CASE("the replay times every compute action of the rank, step after step", "[torch]") {
  for (const std::string name : {"1f1b", "zb-h1"}) {
    const dtwin::Scenario scenario = small_pipeline(name);
    const dtwin::CostModel cost(scenario);
    const auto schedule =
        dtwin::sched::lower(dtwin::sched::generate(scenario.layout.schedule, layout_of(scenario)));
    const auto data = dataset(scenario);
    for (int rank = 0; rank < 2; ++rank) {
      INFO(name << " rank " << rank);
      const auto seconds = dtwin::rt::replay_compute(scenario, cost, schedule, rank, data, 1, 3);
      const std::vector<ActionKind> kinds =
          name == "1f1b" ? std::vector{ActionKind::F, ActionKind::B}
                         : std::vector{ActionKind::F, ActionKind::I, ActionKind::W};
      CHECK(seconds.size() == kinds.size() + 1);  // and OPTIM
      for (ActionKind kind : kinds) {
        REQUIRE(seconds.contains({rank, kind}));
        CHECK(seconds.at({rank, kind}).size() == 3 * 4);  // 3 steps of 4 microbatches
        for (double s : seconds.at({rank, kind})) CHECK(s > 0);
      }
      CHECK(seconds.at({rank, ActionKind::OPTIM}).size() == 3);
    }
  }
}

TEST_CASE("the replay times a gradient synchronisation's own work apart from OPTIM", "[torch]") {
  for (const std::string zero : {"0", "1", "3"}) {
    for (const std::string buckets : {"false", "true"}) {
      INFO("zero " << zero << ", overlap_grad_reduce " << buckets);
      const dtwin::Scenario scenario = dtwin::load_scenario(
          std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml",
          {"model.d_model=64", "model.n_heads=2", "model.ffn_hidden=128", "model.n_layers=2",
           "model.seq_len=32", "cluster.ranks_per_device=2", "layout.pp=1", "layout.dp=2",
           "layout.microbatches=2", "layout.zero=" + zero,
           "layout.zero3_gather=" + std::string(zero == "3" ? "stage" : "layer"),
           "layout.overlap_grad_reduce=" + buckets});
      const dtwin::CostModel cost(scenario);
      const auto seconds = dtwin::rt::replay_compute(
          scenario, cost, dtwin::build_schedule(scenario), 0, dataset(scenario), 1, 3);
      const ActionKind sync = zero == "0" ? ActionKind::ALLREDUCE : ActionKind::REDUCE_GRAD;
      CHECK(seconds.at({0, ActionKind::OPTIM}).size() == 3);
      CHECK(seconds.at({0, ActionKind::B}).size() == 3 * 2);
      if (buckets == "true") {
        CHECK_FALSE(seconds.contains({0, sync}));  // it runs inside the last backward
        continue;
      }
      REQUIRE(seconds.contains({0, sync}));
      CHECK(seconds.at({0, sync}).size() == 3);
      for (double s : seconds.at({0, sync})) CHECK(s > 0);
    }
  }
}

TEST_CASE("the replay refuses a backward before its forward", "[torch]") {
  const dtwin::Scenario scenario = small_pipeline("1f1b");
  const dtwin::CostModel cost(scenario);
  dtwin::sched::Schedule schedule;
  schedule.layout = layout_of(scenario);
  schedule.ranks = {{{0, ActionKind::B, 0}, {0, ActionKind::F, 0}}, {}};
  const auto data = dataset(scenario);
  CHECK_THROWS_WITH(dtwin::rt::replay_compute(scenario, cost, schedule, 0, data, 0, 1),
                    Catch::Contains("0B0 comes before the action that it needs"));
}
