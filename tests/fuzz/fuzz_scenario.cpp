// libFuzzer target: the scenario loader with --set overrides. The input is a scenario's YAML,
// optionally followed by a line "%%" and one override (key.path=value) per line.
#include <sstream>
#include <string>
#include <vector>

#include "models/spec/scenario_loader.hpp"
#include "tests/fuzz/fuzz_input.hpp"

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
  // A message names the file, or the override ("--set K=V: ...") it comes from.
  dtwin::fuzz::expect_clean({path + ":", "--set "}, [&] { dtwin::load_scenario(path, overrides); });
  return 0;
}
