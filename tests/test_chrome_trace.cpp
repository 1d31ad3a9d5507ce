// The Chrome trace's layout (trace/timeline.hpp's to_chrome_trace, trace/chrome_tracks.hpp): one
// track per channel, lanes for a channel's overlapping slices, a flow from each SEND to its RECV,
// a memory counter per rank; and from_chrome_trace reading the actions back.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "trace/timeline.hpp"

namespace {

using dtwin::sched::ActionKind;
using dtwin::trace::TimedAction;

// Two stages, two microbatches: rank 0 posts both sends before rank 1 takes the first, so the
// two sends of its one channel overlap. Times in seconds; every action but the sends carries
// the memory its rank holds at its end.
std::vector<TimedAction> two_stage_step() {
  const auto at = [](int rank, dtwin::sched::Action a, double start, double end, double memory) {
    TimedAction e;
    e.rank = rank;
    e.action = a;
    e.start = start;
    e.end = end;
    e.memory = memory;
    e.peak_memory = memory;
    return e;
  };
  return {at(0, {0, ActionKind::F, 0}, 0, 1, 10),       at(0, {0, ActionKind::SEND_F, 0}, 1, 3, 0),
          at(0, {0, ActionKind::F, 1}, 1, 2, 20),       at(0, {0, ActionKind::SEND_F, 1}, 2, 4, 0),
          at(1, {1, ActionKind::RECV_F, 0}, 0, 3, 5),   at(1, {1, ActionKind::F, 0}, 3, 4, 15),
          at(1, {1, ActionKind::RECV_F, 1}, 4, 4.5, 15)};
}

const dtwin::sched::Layout kTwoStages{.pp = 2, .microbatches = 2};

nlohmann::json events_of(const std::string& trace) {
  return nlohmann::json::parse(trace)["traceEvents"];
}

}  // namespace

TEST_CASE("the Chrome trace gives a channel's overlapping sends a lane each, named") {
  const nlohmann::json events =
      events_of(dtwin::trace::to_chrome_trace(two_stage_step(), kTwoStages));
  std::map<std::pair<int, int>, std::string> names;  // (pid, tid) -> thread name
  std::map<std::string, int> tid;                    // action -> its track
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "X") tid[e["name"].get<std::string>()] = e["tid"].get<int>();
  }
  CHECK(names == std::map<std::pair<int, int>, std::string>{{{0, 0}, "compute"},
                                                            {{0, 1}, "SEND_F to rank 1"},
                                                            {{0, 2}, "SEND_F to rank 1 (2)"},
                                                            {{1, 0}, "compute"},
                                                            {{1, 1}, "RECV_F from rank 0"}});
  CHECK(tid == std::map<std::string, int>{{"0F0", 0},
                                          {"0F1", 0},
                                          {"0SEND_F0", 1},
                                          {"0SEND_F1", 2},
                                          {"1RECV_F0", 1},
                                          {"1F0", 0},
                                          {"1RECV_F1", 1}});
}

TEST_CASE("the Chrome trace links each SEND to its RECV by a flow that starts first") {
  const nlohmann::json events =
      events_of(dtwin::trace::to_chrome_trace(two_stage_step(), kTwoStages));
  std::map<int, std::map<std::string, nlohmann::json>> flows;  // id -> phase -> event
  for (const auto& e : events)
    if (e["ph"] == "s" || e["ph"] == "f") flows[e["id"].get<int>()][e["ph"].get<std::string>()] = e;
  REQUIRE(flows.size() == 2);
  for (const auto& [id, ends] : flows) {
    INFO(id);
    REQUIRE(ends.size() == 2);
    const nlohmann::json &send = ends.at("s"), &receive = ends.at("f");
    CHECK(send["pid"] == 0);
    CHECK(receive["pid"] == 1);
    CHECK(receive["tid"] == 1);
    CHECK(receive["bp"] == "e");
    CHECK(send["ts"].get<double>() < receive["ts"].get<double>());
  }
  // 0SEND_F0 spans 1-3 s: its flow starts at 2 s and ends inside 1RECV_F0 (0-3 s), after it.
  CHECK(flows[1]["s"]["tid"] == 1);
  CHECK(flows[1]["s"]["ts"].get<double>() == 2e6);
  CHECK(flows[1]["f"]["ts"].get<double>() == Approx(2e6 + 1e-3));
  CHECK(flows[2]["s"]["tid"] == 2);
}

TEST_CASE("the Chrome trace samples each rank's memory, SENDs left out, each change once") {
  const nlohmann::json events =
      events_of(dtwin::trace::to_chrome_trace(two_stage_step(), kTwoStages));
  std::map<int, std::vector<std::pair<double, double>>> samples;  // pid -> (ts, bytes)
  for (const auto& e : events)
    if (e["ph"] == "C")
      samples[e["pid"].get<int>()].emplace_back(e["ts"].get<double>(),
                                                e["args"]["bytes"].get<double>());
  // Rank 0: 0F0 from 0 to 1 s holds 10 B, 0F1 from 1 to 2 s 20 B (its start supersedes 0F0's
  // end). Rank 1: 1RECV_F0 5 B, 1F0 15 B from 3 s on.
  CHECK(samples[0] == std::vector<std::pair<double, double>>{{0, 10}, {1e6, 20}});
  CHECK(samples[1] == std::vector<std::pair<double, double>>{{0, 5}, {3e6, 15}});
}

TEST_CASE("from_chrome_trace reads the actions back, on the nanosecond, with their memory") {
  const std::vector<TimedAction> written = two_stage_step();
  const std::vector<TimedAction> read =
      dtwin::trace::from_chrome_trace(dtwin::trace::to_chrome_trace(written, kTwoStages));
  REQUIRE(read.size() == written.size());
  for (size_t i = 0; i < read.size(); ++i) {
    CHECK(read[i].rank == written[i].rank);
    CHECK(read[i].action == written[i].action);
    CHECK(read[i].start == Approx(written[i].start).margin(1e-9));
    CHECK(read[i].end == Approx(written[i].end).margin(1e-9));
    CHECK(read[i].memory == written[i].memory);
  }
}
