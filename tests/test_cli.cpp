// The dtwin executable as a user runs it: exit codes and messages of `dtwin schedule`.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/bad_corpus.hpp"

namespace {

struct Result {
  int exit_code;
  std::string output;  ///< stdout and stderr together
};

Result run_dtwin(const std::string& args) {
  const std::string command = std::string(DTWIN_EXE) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  Result result{0, ""};
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe))
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";

}  // namespace

TEST_CASE("dtwin schedule prints the quickstart 1F1B schedule with its dry run") {
  const Result result = run_dtwin("schedule " + kQuickstart + " --dry-run");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::StartsWith("rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0F2 0SEND_F2 "
                                              "0RECV_B0 0B0"));
  CHECK_THAT(result.output, Catch::Contains("rank 2: 2RECV_F0 2F0 2B0 2SEND_B0"));
  // 1F1B, pp 3, m 4: 3(m + pp - 1) = 18 units, bubble (pp-1)/(m+pp-1) = 1/3.
  CHECK_THAT(result.output, Catch::Contains("18 units, bubble 0.3333"));
}

TEST_CASE("dtwin schedule: --set, --compute-only and the json and csv formats") {
  const Result result = run_dtwin("schedule " + kQuickstart +
                                  " --set layout.schedule=gpipe --set layout.microbatches=2"
                                  " --compute-only --format json --dry-run");
  REQUIRE(result.exit_code == 0);
  const auto doc = nlohmann::json::parse(result.output);
  CHECK(doc["name"] == "gpipe");
  CHECK(doc["ranks"][0] == nlohmann::json({"0F0", "0F1", "0B0", "0B1"}));
  CHECK(doc["dry_run"]["step_units"] == 12);
  const Result csv = run_dtwin("schedule " + kQuickstart + " --format csv");
  CHECK(csv.exit_code == 0);
  CHECK_THAT(csv.output, Catch::StartsWith("rank,step,action,stage,kind,microbatch\n"
                                           "0,0,0F0,0,F,0\n0,1,0SEND_F0,0,SEND_F,0\n"));
}

TEST_CASE("every malformed scenario exits 2 naming file:line") {
  const auto corpus = dtwin::test::bad_scenarios();
  CHECK(corpus.size() >= 20);
  for (const auto& bad : corpus) {
    const Result result = run_dtwin("schedule " + bad.path);
    INFO(bad.path << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Catch::Contains(bad.path + ":" + bad.line + ":"));
    CHECK_THAT(result.output, Catch::Contains(bad.expected));
  }
}

TEST_CASE("bad command lines exit 2 with a message") {
  CHECK(run_dtwin("schedule " + kQuickstart + " --format xml").exit_code == 2);
  CHECK(run_dtwin("schedule").exit_code == 2);
  CHECK(run_dtwin("frobnicate").exit_code == 2);
  const Result missing = run_dtwin("schedule /nonexistent.yaml");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Catch::Contains("/nonexistent.yaml: cannot open scenario file"));
  const Result bad_set = run_dtwin("schedule " + kQuickstart + " --set layout.pp=x");
  CHECK(bad_set.exit_code == 2);
  CHECK_THAT(bad_set.output, Catch::Contains("--set layout.pp=x: layout.pp: expected"));
  CHECK(run_dtwin("--help").exit_code == 0);
}
