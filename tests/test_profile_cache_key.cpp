// Where a profile is cached (runtime/calibrate/profiler.hpp): what re-measures and what reuses it.
#include <catch2/catch.hpp>

#include "models/spec/scenario_loader.hpp"
#include "runtime/calibrate/profiler.hpp"

namespace {

std::string cache_path(const std::vector<std::string>& sets) {
  return dtwin::rt::profile_cache_path(
      dtwin::load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml", sets));
}

}  // namespace

TEST_CASE("a profile is re-measured for another schedule or size, reused for more steps") {
  const std::string quickstart = cache_path({});
  CHECK(cache_path({"training.steps=30"}) == quickstart);
  // The replay runs the schedule's order, so each schedule has its own profile.
  CHECK(cache_path({"layout.schedule=gpipe"}) != quickstart);
  CHECK(cache_path({"layout.microbatches=8"}) != quickstart);
  CHECK(cache_path({"layout.recompute=full"}) != quickstart);
  // Another model: grouped-query attention, a mixture of experts, its routing and layout.
  CHECK(cache_path({"model.n_kv_heads=2"}) != quickstart);
  const std::vector<std::string> moe = {"model.moe.num_experts=4", "model.moe.top_k=2",
                                        "model.moe.expert_ffn_hidden=384"};
  const std::string with_experts = cache_path(moe);
  CHECK(with_experts != quickstart);
  for (const std::string& other :
       {"model.moe.top_k=1", "model.moe.router=sigmoid", "model.moe.capacity_factor=1.5"}) {
    std::vector<std::string> sets = moe;
    sets.push_back(other);
    CAPTURE(other);
    CHECK(cache_path(sets) != with_experts);
  }
}
