// Tests of models/profile: reading, writing and checking measured profiles, and the all-reduce
// interpolation.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include <unistd.h>

#include "models/cost/profile.hpp"
#include "models/spec/scenario_loader.hpp"

using dtwin::AllReducePoint;
using dtwin::ConfigError;
using dtwin::load_profile;
using dtwin::Profile;
using dtwin::save_profile;
using dtwin::StageSeconds;

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";

/// This process's directory for profile files, removed when the process exits (CTest may run
/// test cases, and other builds, in parallel).
struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dtwin_test_profile." + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

std::string temp_path(const std::string& name) {
  static const TempDir dir;
  return (dir.path / (name + ".yaml")).string();
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

/// The message load_profile throws, or "" if it loads.
std::string load_error(const std::string& path) {
  try {
    load_profile(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A valid profile whose line 4 is the first stage and line 9 the first all-reduce point.
const std::string kGood =
    "machine: \"host-x gloo cpu\"\n"
    "threads: 2\n"
    "stages:\n"
    "  - {forward_s: 12ms, backward_s: 0.024, input_backward_s: 0.012, weight_backward_s: "
    "0.012, optimizer_s: 0.003}\n"
    "p2p: {latency: 20us, bandwidth: 2GB/s}\n"
    "allreduce:\n"
    "  ranks: 2\n"
    "  points:\n"
    "    - {bytes: 1MB, seconds: 0.001}\n"
    "    - {bytes: 4MiB, seconds: 0.003}\n";

}  // namespace

TEST_CASE("a profile with units loads in base units", "[profile]") {
  const std::string path = write("good", kGood);
  const Profile p = load_profile(path);
  CHECK(p.source == path);
  CHECK(p.machine == "host-x gloo cpu");
  CHECK(p.threads == 2);
  REQUIRE(p.stages.size() == 1);
  CHECK(p.stages[0].forward == Approx(0.012));
  CHECK(p.stages[0].backward == Approx(0.024));
  CHECK(p.stages[0].input_backward == Approx(0.012));
  CHECK(p.stages[0].weight_backward == Approx(0.012));
  CHECK(p.stages[0].optimizer == Approx(0.003));
  CHECK(p.p2p_latency == Approx(20e-6));
  CHECK(p.p2p_bandwidth == Approx(2e9));
  CHECK(p.allreduce_ranks == 2);
  REQUIRE(p.allreduce.size() == 2);
  CHECK(p.allreduce[0].bytes == 1e6);
  CHECK(p.allreduce[1].bytes == 4.0 * 1024 * 1024);
  CHECK(p.allreduce[1].seconds == Approx(0.003));
}

TEST_CASE("machine and threads are optional", "[profile]") {
  const std::string path = write("minimal",
                                 "stages: [{forward_s: 1, backward_s: 2, input_backward_s: 1, "
                                 "weight_backward_s: 1, optimizer_s: 0}]\n"
                                 "p2p: {latency: 0, bandwidth: 1e9}\n"
                                 "allreduce: {ranks: 1, points: []}\n");
  const Profile p = load_profile(path);
  CHECK(p.machine.empty());
  CHECK(p.threads == 1);
  CHECK(p.allreduce.empty());
}

TEST_CASE("save then load gives the same profile back", "[profile]") {
  Profile p;
  p.machine = "node-7: nccl \"cuda\" # 8xH100";
  p.threads = 4;
  p.stages = {StageSeconds{0.1, 1.0 / 3, 0.2, 2.0 / 3 - 0.2, 1e-5, 0.04, 1.0 / 30},
              StageSeconds{123.456, 7e-7, 3.5e-7, 3.5e-7, 0}};
  p.stages[1].variation = 1.0 / 11;
  p.stages[1].sync_local = 1.0 / 70;
  p.stages[0].tp_forward_cpu = 0.01;
  p.stages[0].tp_backward_cpu = 1.0 / 90;
  p.p2p_latency = 2.5e-5;
  p.p2p_bandwidth = 12.5e9;
  p.inter_host_latency = 1.0 / 3e4;
  p.inter_host_bandwidth = 12.5e6;
  p.inter_host_queue_delay = 1.0 / 300;
  p.allreduce = {AllReducePoint{1024, 1.0 / 7}, AllReducePoint{1 << 20, 0.1 + 0.2},
                 AllReducePoint{3e9, 12}};
  p.allreduce_ranks = 8;
  p.allgather = {AllReducePoint{1024, 1.0 / 9}, AllReducePoint{3e9, 7}};
  p.reduce_scatter = {AllReducePoint{1 << 20, 0.2}};
  p.concurrency = {1, 1.1044, 5.0 / 3};
  p.members_concurrency = 1.1044;
  p.processes_sharing_cores = 4;
  p.concurrency_variation = {0.03, 1.0 / 13, 0.25};
  p.p2p_concurrency = {1, 1.0 / 0.9};
  p.p2p_cpu_s_per_byte = 1.0 / 3e8;
  p.wake_delay = {1.1e-4, 1e-4, 1.0 / 700};
  p.late_receive = {3.3e-4, 1.0 / 900};
  p.gemms = {{"qkv", 256, 864, 288, 1.0 / 3000}, {"lm_head \"wgrad\"", 288, 32000, 256, 2e-3}};
  p.host_op_seconds = 1.0 / 170000;
  p.host_op_seconds_no_grad = 1.0 / 310000;

  const std::string path = temp_path("roundtrip");
  save_profile(p, path);
  const Profile back = load_profile(path);
  CHECK(back == p);
  CHECK(back.source == path);
  CHECK(back.stages[0].backward == 1.0 / 3);  // bit-exact, not approximately

  SECTION("an empty all-reduce table and an empty machine") {
    p.allreduce.clear();
    p.allreduce_ranks = 0;
    p.machine = "";
    save_profile(p, path);
    CHECK(load_profile(path) == p);
  }
  SECTION("equality looks at every measured field") {
    const std::vector<std::function<void(Profile&)>> changes{
        [](Profile& q) { q.stages[1].weight_backward *= 2; },
        [](Profile& q) { q.stages[0].tp_backward = 0; },
        [](Profile& q) { q.stages[1].variation = 0; },
        [](Profile& q) { q.stages[1].sync_local = 0; },
        [](Profile& q) { q.stages[0].tp_backward_cpu = 0; },
        [](Profile& q) { q.allreduce_ranks = 2; },
        [](Profile& q) { q.inter_host_bandwidth = 1e9; },
        [](Profile& q) { q.inter_host_queue_delay = 0; },
        [](Profile& q) { q.concurrency.pop_back(); },
        [](Profile& q) { q.members_concurrency = 1; },
        [](Profile& q) { q.processes_sharing_cores = 1; },
        [](Profile& q) { q.concurrency_variation.pop_back(); },
        [](Profile& q) { q.p2p_concurrency.clear(); },
        [](Profile& q) { q.p2p_cpu_s_per_byte = 0; },
        [](Profile& q) { q.wake_delay.pop_back(); },
        [](Profile& q) { q.late_receive.pop_back(); },
        [](Profile& q) { q.allgather.pop_back(); },
        [](Profile& q) { q.reduce_scatter.clear(); },
        [](Profile& q) { q.gemms[1].k = 128; },
        [](Profile& q) { q.host_op_seconds *= 2; },
        [](Profile& q) { q.host_op_seconds_no_grad = 0; }};
    for (size_t i = 0; i < changes.size(); ++i) {
      CAPTURE(i);
      Profile q = back;
      changes[i](q);
      CHECK_FALSE(q == p);
    }
    Profile q = back;
    q.source = "elsewhere.yaml";  // where it was read from is not a measurement
    CHECK(q == p);
  }
}

TEST_CASE("bad profiles are rejected with file:line:col and key", "[profile]") {
  const auto error_of = [](const std::string& name, const std::string& text) {
    const std::string path = write(name, text);
    const std::string msg = load_error(path);
    INFO(msg);
    CHECK(msg.find('\n') == std::string::npos);
    return std::make_pair(path, msg);
  };
  SECTION("unknown key in a stage") {
    std::string text = kGood;
    text.replace(text.find("optimizer_s"), 11, "optimiser_s");
    const auto [path, msg] = error_of("unknown_stage_key", text);
    CHECK(starts_with(msg, path + ":4:"));
    CHECK(contains(msg, "stages[0].optimiser_s: unknown key"));
  }
  SECTION("unknown top-level key") {
    const auto [path, msg] = error_of("unknown_top_key", kGood + "gpu: yes\n");
    CHECK(starts_with(msg, path + ":11:1: gpu: unknown key"));
  }
  SECTION("negative seconds or variation") {
    for (const auto& [from, to, expected] :
         {std::tuple<std::string, std::string, std::string>{
              "0.024", "-0.024", "stages[0].backward_s: expected a latency >= 0, got '-0.024'"},
          {", optimizer_s", ", variation: -0.1, optimizer_s",
           "stages[0].variation: expected a number >= 0, got '-0.1'"},
          {", optimizer_s", ", sync_local_s: -0.002, optimizer_s",
           "stages[0].sync_local_s: expected a latency >= 0, got '-0.002'"},
          {", optimizer_s", ", tp_backward_cpu_s: -1ms, optimizer_s",
           "stages[0].tp_backward_cpu_s: expected a latency >= 0, got '-1ms'"}}) {
      std::string text = kGood;
      text.replace(text.find(from), from.size(), to);
      const auto [path, msg] = error_of("negative_" + from.substr(from.size() - 3), text);
      CHECK(starts_with(msg, path + ":4:"));
      CHECK(contains(msg, expected));
    }
  }
  SECTION("a host seconds per operator of zero") {
    const auto [path, msg] = error_of("host_op_zero", kGood + "host_op: {grad: 0, no_grad: 3us}\n");
    CHECK(starts_with(msg, path + ":11:"));
    CHECK(contains(msg, "host_op.grad: expected a latency > 0, got '0'"));
  }
  SECTION("a GEMM of no rows") {
    const auto [path, msg] =
        error_of("gemm_rows", kGood + "gemms:\n  - {name: qkv, m: 0, n: 8, k: 8, seconds: 1ms}\n");
    CHECK(starts_with(msg, path + ":12:"));
    CHECK(contains(msg, "gemms[0].m: expected a positive integer, got '0'"));
  }
  SECTION("zero bandwidth") {
    std::string text = kGood;
    text.replace(text.find("2GB/s"), 5, "0");
    const auto [path, msg] = error_of("zero_bandwidth", text);
    CHECK(starts_with(msg, path + ":5:"));
    CHECK(contains(msg, "p2p.bandwidth: expected a bandwidth > 0"));
  }
  SECTION("a bad unit") {
    std::string text = kGood;
    text.replace(text.find("1MB"), 3, "1MB/s");
    const auto [path, msg] = error_of("bad_unit", text);
    CHECK(starts_with(msg, path + ":9:"));
    CHECK(contains(msg, "allreduce.points[0].bytes: expected a size such as"));
  }
  SECTION("no stage") {
    const auto [path, msg] = error_of("no_stage",
                                      "stages: []\np2p: {latency: 0, bandwidth: 1}\n"
                                      "allreduce: {ranks: 1, points: []}\n");
    CHECK(starts_with(msg, path + ":1:"));
    CHECK(contains(msg, "stages: expected a non-empty list of stages"));
  }
  SECTION("a missing stage key") {
    std::string text = kGood;
    text.replace(text.find(", optimizer_s: 0.003"), 20, "");
    const auto [path, msg] = error_of("missing_stage_key", text);
    CHECK(starts_with(msg, path + ":4:"));
    CHECK(contains(msg, "stages[0].optimizer_s: missing key"));
  }
  SECTION("points out of order") {
    std::string text = kGood;
    text.replace(text.find("4MiB"), 4, "1MB");
    const auto [path, msg] = error_of("unsorted_points", text);
    CHECK(starts_with(msg, path + ":10:"));
    CHECK(contains(msg, "allreduce.points[1].bytes: expected points in strictly increasing"));
  }
  SECTION("ZeRO's points out of order") {
    const std::string text =
        std::string(kGood) +
        "  reduce_scatter:\n    - {bytes: 2MB, seconds: 1ms}\n    - {bytes: 1MB, seconds: 2ms}\n";
    const auto [path, msg] = error_of("unsorted_scatter", text);
    CHECK(contains(msg, "allreduce.reduce_scatter[1].bytes: expected points in strictly"));
  }
  SECTION("zero threads") {
    std::string text = kGood;
    text.replace(text.find("threads: 2"), 10, "threads: 0");
    const auto [path, msg] = error_of("zero_threads", text);
    CHECK(starts_with(msg, path + ":2:"));
    CHECK(contains(msg, "threads: expected a positive integer, got '0'"));
  }
  SECTION("a concurrency curve that is not a list of positive slowdowns") {
    const auto [path, msg] = error_of("zero_slowdown", kGood + "concurrency: [1, 0]\n");
    CHECK(starts_with(msg, path + ":11:"));
    CHECK(contains(msg, "concurrency[1]: expected a number > 0, got '0'"));
    const auto [path2, msg2] = error_of("empty_curve", kGood + "concurrency: []\n");
    CHECK(contains(msg2, "concurrency: expected a non-empty list of slowdowns"));
  }
  SECTION("a variation curve that is not a list of non-negative numbers") {
    const auto [path, msg] =
        error_of("negative_variation", kGood + "concurrency_variation: [0.1, -0.2]\n");
    CHECK(starts_with(msg, path + ":11:"));
    CHECK(contains(msg, "concurrency_variation[1]: expected a number >= 0, got '-0.2'"));
  }
  SECTION("a loopback curve that is not a list of positive slowdowns") {
    const std::string p2p = "p2p: {latency: 20us, bandwidth: 2GB/s}";
    const std::string bad = "p2p: {latency: 20us, bandwidth: 2GB/s, concurrency: [1, -2]}";
    const auto [path, msg] =
        error_of("negative_p2p_slowdown", kGood.substr(0, kGood.find(p2p)) + bad +
                                              kGood.substr(kGood.find(p2p) + p2p.size()));
    CHECK(contains(msg, path + ":5:"));
    CHECK(contains(msg, "p2p.concurrency[1]: expected a number > 0, got '-2'"));
  }
  SECTION("a negative queue delay between hosts") {
    const auto [path, msg] =
        error_of("negative_queue_delay",
                 kGood + "inter_host: {latency: 1ms, bandwidth: 1GB/s, queue_delay: -4ms}\n");
    CHECK(starts_with(msg, path + ":11:"));
    CHECK(contains(msg, "inter_host.queue_delay: expected a latency >= 0, got '-4ms'"));
  }
  SECTION("a wake delay that is not a list of delays") {
    const auto [path, msg] = error_of("negative_wake_delay", kGood + "wake_delay: [1ms, -1]\n");
    CHECK(starts_with(msg, path + ":11:"));
    CHECK(contains(msg, "wake_delay[1]: expected a latency >= 0, got '-1'"));
  }
  SECTION("a late receive that is not a list of seconds") {
    const auto [path, msg] = error_of("late_receive_map", kGood + "late_receive: {a: 1}\n");
    CHECK(starts_with(msg, path + ":11:"));
    CHECK(contains(msg, "late_receive: expected a non-empty list of delays"));
  }
  SECTION("not a map") {
    const auto [path, msg] = error_of("not_a_map", "- 1\n- 2\n");
    CHECK(contains(msg, "profile: expected a map, got '[1, 2]'"));  // quoted on one line
  }
  SECTION("invalid YAML") {
    const auto [path, msg] = error_of("invalid_yaml", "stages: [\n");
    CHECK(starts_with(msg, path + ":"));
    CHECK(contains(msg, "invalid YAML"));
  }
  SECTION("missing file") {
    const std::string path = temp_path("no_such_profile_file");
    std::filesystem::remove(path);
    CHECK(load_error(path) == path + ": cannot open profile file");
  }
}

TEST_CASE("the concurrency slowdown: measured points, then time-slicing of the last", "[profile]") {
  Profile p;
  CHECK_THROWS_AS(p.concurrency_slowdown(1), std::logic_error);
  p.concurrency = {1, 1.1, 1.66};
  CHECK(p.concurrency_slowdown(1) == 1);
  CHECK(p.concurrency_slowdown(2) == 1.1);
  CHECK(p.concurrency_slowdown(3) == 1.66);
  // 4 ranks share what 3 got: each 4/3 slower again.
  CHECK(p.concurrency_slowdown(4) == Approx(1.66 * 4 / 3));
}

TEST_CASE("the resume delay: the wake delay above the one alone, the last point beyond",
          "[profile]") {
  Profile p;
  CHECK(p.resume_delay(2) == 0);  // not measured
  p.wake_delay = {1e-4, 5e-5, 2e-3};
  CHECK(p.resume_delay(0) == 0);
  CHECK(p.resume_delay(1) == 0);  // below the delay alone: never negative
  CHECK(p.resume_delay(2) == Approx(2e-3 - 1e-4));
  CHECK(p.resume_delay(5) == Approx(2e-3 - 1e-4));
}

TEST_CASE(
    "the log variance of a pass while ranks share the cores: ln(1 + v^2) of the count's "
    "point, the last point beyond",
    "[profile]") {
  Profile p;
  CHECK(p.concurrency_log_variance(3) == 0);  // not measured
  p.concurrency_variation = {0.03, 0.3, 0.2};
  CHECK(p.concurrency_log_variance(1) == Approx(std::log(1.0009)));
  CHECK(p.concurrency_log_variance(2) == Approx(std::log(1.09)));
  CHECK(p.concurrency_log_variance(3) == Approx(std::log(1.04)));
  CHECK(p.concurrency_log_variance(8) == Approx(std::log(1.04)));
}

TEST_CASE("the late receive: the point of the busy count, the last point beyond", "[profile]") {
  Profile p;
  CHECK(p.late_receive_seconds(1) == 0);  // not measured
  p.late_receive = {3e-4, 2e-3};
  CHECK(p.late_receive_seconds(0) == 3e-4);
  CHECK(p.late_receive_seconds(1) == 2e-3);
  CHECK(p.late_receive_seconds(4) == 2e-3);
}

TEST_CASE("Gloo's CPU seconds per byte: the largest all-reduce point less the link's part",
          "[profile]") {
  Profile p;
  CHECK(p.allreduce_overhead_s_per_byte() == 0);  // nothing measured
  p.p2p_bandwidth = 1e9;
  p.p2p_latency = 1e-5;
  p.allreduce_ranks = 4;
  // 4 ranks, 8 MB: 6 steps, each 2e-5 + 8e6/1e9 s on the shared loopback = 48.06 ms; a rank
  // sends 6 x 2 MB.
  p.allreduce = {{1e6, 0.01}, {8e6, 0.06006}};
  CHECK(p.allreduce_overhead_s_per_byte() == Approx((0.06006 - 6 * (1e-5 + 8e-3)) / 12e6));
  p.allreduce.back().seconds = 0.01;  // faster than the link: no CPU part
  CHECK(p.allreduce_overhead_s_per_byte() == 0);
}

TEST_CASE("ZeRO's all-gather and reduce-scatter: the largest point less the half ring's link",
          "[profile]") {
  Profile p;
  p.p2p_bandwidth = 1e9;
  p.p2p_latency = 1e-5;
  p.allreduce_ranks = 4;
  p.allreduce = {{8e6, 0.06006}};
  // Not measured: the all-reduce's figure.
  CHECK(p.half_ring_overhead_s_per_byte(p.reduce_scatter) == p.allreduce_overhead_s_per_byte());
  // 4 ranks, 8 MB: 3 steps of 1e-5 + 8e6/1e9 s on the shared loopback; a rank sends 3 x 2 MB.
  p.reduce_scatter = {{1e6, 0.005}, {8e6, 0.04}};
  CHECK(p.half_ring_overhead_s_per_byte(p.reduce_scatter) ==
        Approx((0.04 - 3 * (1e-5 + 8e-3)) / 6e6));
  // Across hosts each rank's flow has its own link: 3 latencies and 6 MB at 1 GB/s.
  p.allreduce_across_hosts = true;
  p.inter_host_latency = 1e-4;
  p.inter_host_bandwidth = 1e9;
  CHECK(p.half_ring_overhead_s_per_byte(p.reduce_scatter) ==
        Approx((0.04 - 3 * 1e-4 - 6e6 / 1e9) / 6e6));
}

TEST_CASE("all-reduce seconds are interpolated between measured points", "[profile]") {
  Profile p;
  p.allreduce = {{1e6, 1e-3}, {2e6, 1.5e-3}, {4e6, 2.5e-3}};
  SECTION("at the points") {
    CHECK(p.allreduce_seconds(1e6) == Approx(1e-3));
    CHECK(p.allreduce_seconds(2e6) == Approx(1.5e-3));
    CHECK(p.allreduce_seconds(4e6) == Approx(2.5e-3));
  }
  SECTION("between points") {
    CHECK(p.allreduce_seconds(1.5e6) == Approx(1.25e-3));
    CHECK(p.allreduce_seconds(3e6) == Approx(2e-3));
  }
  SECTION("beyond the ends, along the end segments") {
    // above: slope of the last segment 1e-3 s / 2e6 B
    CHECK(p.allreduce_seconds(8e6) == Approx(2.5e-3 + 4e6 * 0.5e-9));
    // below: slope of the first segment 0.5e-3 s / 1e6 B; at 0 bytes its intercept, 0.5 ms
    CHECK(p.allreduce_seconds(0.5e6) == Approx(0.75e-3));
    CHECK(p.allreduce_seconds(0) == Approx(0.5e-3));
  }
  SECTION("never negative") {
    Profile steep;
    steep.allreduce = {{1e6, 1e-3}, {2e6, 3e-3}};  // the line crosses 0 at 0.5 MB
    CHECK(steep.allreduce_seconds(0.25e6) == 0);
    CHECK(steep.allreduce_seconds(0.75e6) == Approx(0.5e-3));
  }
  SECTION("one point: the line through the origin; none: 0") {
    Profile one;
    one.allreduce = {{2e6, 4e-3}};
    CHECK(one.allreduce_seconds(1e6) == Approx(2e-3));
    CHECK(one.allreduce_seconds(4e6) == Approx(8e-3));
    CHECK(Profile{}.allreduce_seconds(1e6) == 0);
  }
}

TEST_CASE("a profile must have one entry per pipeline stage", "[profile]") {
  const dtwin::Scenario quickstart = dtwin::load_scenario(kQuickstart);  // pp 3
  Profile p;
  p.source = "measured.yaml";
  p.stages.resize(3);
  CHECK_NOTHROW(dtwin::check_profile_matches(p, quickstart));
  p.stages.resize(2);
  CHECK_THROWS_WITH(dtwin::check_profile_matches(p, quickstart),
                    "measured.yaml: stages: expected 3 stages (layout.pp * layout.virtual_stages "
                    "of " +
                        kQuickstart + "), got '2'");
  const dtwin::Scenario interleaved = dtwin::load_scenario(
      kQuickstart, {"model.n_layers=8", "layout.pp=2", "cluster.ranks_per_device=2",
                    "layout.schedule=interleaved-1f1b", "layout.virtual_stages=2"});
  p.stages.resize(4);
  CHECK_NOTHROW(dtwin::check_profile_matches(p, interleaved));
}
