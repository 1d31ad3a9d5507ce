// libFuzzer target: the scenario loader with --set overrides, then what every command does next
// with what it accepts: the schedule built and lowered, and each rank's memory walked. The input
// is a scenario's YAML, optionally followed by a line "%%" and one override (key.path=value) per
// line. The loader's size guard runs with a budget of kBudgetBytes, so a size it lets through
// that the lowering cannot hold shows as libFuzzer's out-of-memory or timeout finding.
#include <sstream>
#include <string>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "models/cost/schedule_memory.hpp"
#include "models/spec/scenario_loader.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

// The size guard's budget here: 50 MB of simulation, about 100,000 actions (kBytesPerAction),
// which lower within libFuzzer's 10 s and 2 GB limits (scripts/fuzz.sh) under ASan.
constexpr double kBudgetBytes = 50e6;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find("\n%%\n");
  const std::string yaml = input.substr(0, split);
  std::vector<std::string> overrides;
  if (split != std::string::npos) {
    std::istringstream lines(input.substr(split + 4));
    for (std::string line; std::getline(lines, line);) overrides.push_back(line);
  }
  const std::string& path =
      dtwin::fuzz::write_input(reinterpret_cast<const uint8_t*>(yaml.data()), yaml.size());
  // A message names the file, or the override ("--set K=V: ...") it comes from. What the loader
  // accepts must lower and walk without any exception.
  dtwin::fuzz::expect_clean({path + ":", "--set "}, [&] {
    const dtwin::Scenario scenario = dtwin::load_scenario(path, overrides, kBudgetBytes);
    const dtwin::sched::Schedule schedule = dtwin::build_schedule(scenario);
    const dtwin::CostModel cost(scenario);
    for (int rank = 0; rank < schedule.layout.group_count(); ++rank)
      dtwin::peak_memory_bytes(schedule, rank, cost);
  });
  return 0;
}
