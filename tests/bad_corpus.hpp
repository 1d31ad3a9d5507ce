// The malformed-scenario corpus in tests/scenarios/bad/: each file's first line is
// "# expect: <part of the error message> @ <line the error must name>".
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dtwin::test {

struct BadScenario {
  std::string path;      ///< the corpus file
  std::string expected;  ///< text the error message must contain
  std::string line;      ///< 1-based line the error must name, as "<path>:<line>:"
};

/// Every corpus file with its expectation; a file without a well-formed first line gets an
/// empty `line`, which the tests report as a corpus defect.
inline std::vector<BadScenario> bad_scenarios() {
  const std::filesystem::path dir =
      std::filesystem::path(DTWIN_SOURCE_DIR) / "tests" / "scenarios" / "bad";
  std::vector<BadScenario> corpus;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    BadScenario bad{entry.path().string(), "", ""};
    std::ifstream in(bad.path);
    std::string first;
    std::getline(in, first);
    const std::string tag = "# expect: ";
    const auto at = first.rfind(" @ ");
    if (first.rfind(tag, 0) == 0 && at != std::string::npos) {
      bad.expected = first.substr(tag.size(), at - tag.size());
      bad.line = first.substr(at + 3);
    }
    corpus.push_back(bad);
  }
  return corpus;
}

}  // namespace dtwin::test
