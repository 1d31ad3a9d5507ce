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
}
