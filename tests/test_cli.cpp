// The dtwin executable as a user runs it: exit codes and messages of `dtwin schedule`.
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/bad_corpus.hpp"
#include "tests/run_process.hpp"

namespace {

using Result = dtwin::test::ProcessResult;
using dtwin::test::run_dtwin;

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

TEST_CASE("every malformed scenario exits 2 naming file:line, for every command") {
  const auto corpus = dtwin::test::bad_scenarios();
  CHECK(corpus.size() >= 20);
  for (const char* command : {"schedule ", "simulate -o /nonexistent/never "})
    for (const auto& bad : corpus) {
      const Result result = run_dtwin(command + bad.path);
      INFO(command << bad.path << "\n" << result.output);
      CHECK(result.exit_code == 2);
      CHECK_THAT(result.output, Catch::Contains(bad.path + ":" + bad.line + ":"));
      CHECK_THAT(result.output, Catch::Contains(bad.expected));
    }
}

TEST_CASE("dtwin simulate writes the predicted trace and summary") {
  const std::string out = "sim-quickstart-out";
  std::filesystem::remove_all(out);
  const Result result = run_dtwin("simulate " + kQuickstart + " -o " + out);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("predicted quickstart: step"));
  const Result schedule = run_dtwin("schedule " + kQuickstart + " --format json");
  const auto lowered = nlohmann::json::parse(schedule.output);

  std::ifstream trace_file(out + "/predicted.trace.json");
  const auto trace = nlohmann::json::parse(trace_file);
  std::map<int, std::multiset<std::string>> executed;  // rank -> action names
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int rank = e["pid"];
    executed[rank].insert(e["name"].get<std::string>());
    CHECK(e["dur"].get<double>() >= 0);
    const std::string kind = e["args"]["kind"];
    const bool compute =
        kind == "F" || kind == "B" || kind == "I" || kind == "W" || kind == "OPTIM";
    CHECK(e["tid"] == (compute ? 0 : 1));
  }
  // Exactly one event per action of the lowered schedule, on its rank.
  REQUIRE(executed.size() == 3);
  for (int rank = 0; rank < 3; ++rank) {
    std::multiset<std::string> expected;
    for (const auto& a : lowered["ranks"][rank]) expected.insert(a.get<std::string>());
    CHECK(executed[rank] == expected);
  }
  std::ifstream summary_file(out + "/predicted.summary.json");
  const auto summary = nlohmann::json::parse(summary_file);
  CHECK(summary["step_time_s"].get<double>() > 0);
  CHECK(summary["bubble_fraction"].get<double>() > 0);
  CHECK(summary["ranks"].size() == 3);
  for (const auto& rank : summary["ranks"]) {
    const double parts = rank["compute_s"].get<double>() + rank["comm_s"].get<double>() +
                         rank["idle_s"].get<double>();
    CHECK(parts == Approx(summary["step_time_s"].get<double>()));
    CHECK(rank["memory_ok"] == true);
  }
}

TEST_CASE("dtwin simulate flags memory beyond the device instead of failing") {
  const Result result = run_dtwin("simulate " + kQuickstart +
                                  " --set cluster.device.memory=1MB -o sim-small-memory-out");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("NO"));
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
