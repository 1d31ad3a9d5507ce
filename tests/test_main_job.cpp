// `dtwin run`, the main job, end to end on a shortened quickstart: profile, simulate, train,
// compare and plot leave their files, and the prediction is checked against the measurement.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "models/cost/kernel_model.hpp"
#include "models/cost/profile.hpp"
#include "models/spec/device_description.hpp"
#include "tests/run_process.hpp"

// Not under TSan ([threads]): its two profiles took 240 s there; the ranks it launches run under
// TSan in the training tests (test_train*.cpp), the launcher's in test_external_launch.cpp.
TEST_CASE(
    "dtwin run leaves traces, compare.json, report.md and timeline.png, and with --bracket "
    "predicts with the profiles measured before and after training") {
  const std::string dir = "main-job-quickstart";
  std::filesystem::remove_all(dir);
  const auto result = dtwin::test::run_dtwin(
      std::string("run ") + DTWIN_SOURCE_DIR + "/scenarios/quickstart.yaml --set training.steps=6" +
      " --set model.d_model=96 --set model.n_heads=2 --set model.ffn_hidden=256" +
      " --set cluster.device.model=h100-sxm --data-dir " + DTWIN_SOURCE_DIR +
      "/data --bracket -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  for (const char* file :
       {"predicted.trace.json", "predicted.summary.json", "measured.trace.json",
        "measured.summary.json", "loss.csv", "compare.json", "report.md", "timeline.png",
        "loss.png", "profile-before.yaml", "profile-after.yaml", "after/predicted.summary.json",
        "after/predicted.trace.json", "profile.device.yaml"})
    CHECK(std::filesystem::exists(dir + "/" + file));
  // The device description fitted to the profile the prediction used (the one before training):
  // its host seconds per operator and its GEMMs' efficiency, not the named description's.
  const dtwin::Profile before = dtwin::load_profile(dir + "/profile-before.yaml");
  const dtwin::DeviceDescription fitted =
      dtwin::load_device_description(dir + "/profile.device.yaml", "");
  CHECK(fitted.host_op_overhead == Approx(before.host_op_seconds).epsilon(1e-9));
  CHECK(fitted.host_op_overhead_no_grad == Approx(before.host_op_seconds_no_grad).epsilon(1e-9));
  CHECK(fitted.gemm_efficiency ==
        dtwin::load_device_description(dir + "/profile-before.device.yaml", "").gemm_efficiency);
  CHECK(fitted.gemm_efficiency != dtwin::load_device_description("h100-sxm", "").gemm_efficiency);
  CHECK_THAT(result.output, Catch::Contains("quickstart: predicted step") &&
                                Catch::Contains("== 4/6 profile after training") &&
                                Catch::Contains("bracket: predicted"));
  std::ifstream in(dir + "/compare.json");
  const auto compare = nlohmann::json::parse(in);
  // The bracket: the usual prediction (profile before), the one with the profile after (its
  // own simulation's summary), the measurement, and whether it lies between.
  std::ifstream bracket_in(dir + "/bracket.json"), after_in(dir + "/after/predicted.summary.json");
  const auto bracket = nlohmann::json::parse(bracket_in);
  const double before_s = bracket["predicted_before_s"], after_s = bracket["predicted_after_s"];
  const double measured_s = bracket["measured_s"];
  CHECK(before_s == Approx(compare["step_time"]["predicted_s"].get<double>()));
  CHECK(measured_s == Approx(compare["step_time"]["measured_s"].get<double>()));
  CHECK(after_s == Approx(nlohmann::json::parse(after_in)["step_time_s"].get<double>()));
  CHECK(after_s > 0);
  CHECK(bracket["inside"] ==
        (measured_s >= std::min(before_s, after_s) && measured_s <= std::max(before_s, after_s)));
  CHECK(compare["measured_steps"] == 5);  // 6 steps, the warm-up step dropped
  CHECK(compare["step_time"]["predicted_s"].get<double>() > 0);
  CHECK(compare["step_time"]["measured_s"].get<double>() > 0);
  // One thread per rank on the CPU: every compute action carries its thread's CPU time, at most
  // its duration, and the comparison splits the compute error into CPU time and waiting.
  std::ifstream trace_in(dir + "/measured.trace.json");
  const auto trace = nlohmann::json::parse(trace_in);
  int computed = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("args") || !e["args"].contains("kind")) continue;
    const std::string kind = e["args"]["kind"];
    if (kind != "F" && kind != "B" && kind != "OPTIM") {
      CHECK_FALSE(e["args"].contains("cpu_us"));
      continue;
    }
    ++computed;
    REQUIRE(e["args"].contains("cpu_us"));
    CHECK(e["args"]["cpu_us"].get<double>() > 0);
    CHECK(e["args"]["cpu_us"].get<double>() <= e["dur"].get<double>() + 1);  // 1 µs of rounding
  }
  CHECK(computed == 6 * (12 + 12 + 3));  // 6 steps of 12 F, 12 B and 3 OPTIM
  REQUIRE(compare.contains("cores"));
  CHECK(compare["kinds"][0]["measured_cpu_mean_s"].get<double>() > 0);
}

TEST_CASE("dtwin plan --run trains the best simulated layouts the runtime can execute") {
  const std::string dir = "plan-run-quickstart";
  std::filesystem::remove_all(dir);
  const auto result = dtwin::test::run_dtwin(
      std::string("plan ") + DTWIN_SOURCE_DIR + "/scenarios/quickstart.yaml --gpus 4 --top 3" +
      " --run 2 --run-steps 3 --data-dir " + DTWIN_SOURCE_DIR + "/data -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::ifstream csv(dir + "/plan.csv");
  std::string line;
  const auto fields = [](const std::string& row) {
    std::vector<std::string> out;
    std::stringstream in(row);
    for (std::string field; std::getline(in, field, ',');) out.push_back(field);
    if (!row.empty() && row.back() == ',') out.emplace_back();
    return out;
  };
  std::getline(csv, line);
  const std::vector<std::string> header = fields(line);
  const auto column = std::ranges::find(header, "measured_tokens_per_s");
  REQUIRE(column != header.end());
  const auto index = static_cast<size_t>(column - header.begin());
  int measured = 0;
  while (std::getline(csv, line)) {
    const std::vector<std::string> row = fields(line);
    REQUIRE(row.size() == header.size());
    if (!row[index].empty()) {
      ++measured;
      CHECK(std::stod(row[index]) > 0);
    }
  }
  CHECK(measured == 2);
  CHECK(std::filesystem::exists(dir + "/plan-runs/1/measured.summary.json"));
}

namespace {

// `dtwin profile` of scenarios/NAME.yaml with a smaller model of `layers` layers, which keeps
// the probes short, into `path`; returns its result (exit 0 required).
dtwin::test::ProcessResult profile_small(const std::string& name, int layers,
                                         const std::string& path, const std::string& extra = "") {
  const auto result = dtwin::test::run_dtwin(
      std::string("profile ") + DTWIN_SOURCE_DIR + "/scenarios/" + name +
      ".yaml --set model.d_model=96 --set model.n_heads=2 --set model.ffn_hidden=256 --set "
      "model.n_layers=" +
      std::to_string(layers) + " --data-dir " + DTWIN_SOURCE_DIR + "/data -o " + path + " " +
      extra);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return result;
}

}  // namespace

TEST_CASE("dtwin profile measures the slowdown of 1, 2 and 3 rank processes computing at once",
          "[serial]") {
  // The quickstart's 3 ranks share one device.
  const std::string path = "profile-concurrency.yaml";
  const auto result = profile_small("quickstart", 3, path);
  CHECK_THAT(result.output, Catch::Contains("slowdown with k ranks computing at once: k=1 x1.000"));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  INFO(text);
  const auto at = text.find("concurrency: [");
  REQUIRE(at != std::string::npos);
  double k1 = 0, k2 = 0, k3 = 0;
  REQUIRE(std::sscanf(text.c_str() + at, "concurrency: [%lf, %lf, %lf]", &k1, &k2, &k3) == 3);
  CHECK(k1 == 1);
  // Two processes on their own cores run about as fast as one: at least 1 less twice the
  // spread the profile measured for that point (concurrency_variation, the samples' coefficient
  // of variation; a shared 2-vCPU VM's is 0.1-0.2, and 0.89 was measured there under ASan).
  const auto spread = text.find("concurrency_variation: [");
  REQUIRE(spread != std::string::npos);
  double v1 = 0, v2 = 0;
  REQUIRE(std::sscanf(text.c_str() + spread, "concurrency_variation: [%lf, %lf", &v1, &v2) == 2);
  CHECK(k2 >= 1 - 2 * v2);
  // Each rank computes with t = max(1, C/3) threads on the C cores, so 3 busy processes share
  // them at least max(1, 3t/C) slower: the probes really run at once, as separate processes.
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int threads = std::max(1, cores / 3);
  CHECK(k3 >= 0.9 * std::max(1.0, 3.0 * threads / cores));
  CHECK(k3 >= k2 * 0.95);
  // How late a computing probe wakes from its naps with 0, 1 and 2 others computing.
  const auto wake = text.find("wake_delay: [");
  REQUIRE(wake != std::string::npos);
  double w0 = -1, w1 = -1, w2 = -1;
  REQUIRE(std::sscanf(text.c_str() + wake, "wake_delay: [%lf, %lf, %lf]", &w0, &w1, &w2) == 3);
  CHECK(w0 >= 0);
  CHECK(w1 >= 0);
  CHECK(w2 >= 0);
  // Late receives over a real Gloo pair of probes: at least one message's transfer each.
  const auto late = text.find("late_receive: [");
  REQUIRE(late != std::string::npos);
  double l0 = -1, l1 = -1, l2 = -1;
  REQUIRE(std::sscanf(text.c_str() + late, "late_receive: [%lf, %lf, %lf]", &l0, &l1, &l2) == 3);
  CHECK(l0 > 0);
  CHECK(l1 > 0);
  CHECK(l2 > 0);
  // The sending probe's Gloo threads worked for its messages (attributable with one intra-op
  // thread per probe): some CPU per byte, less than 10 ms for one 96 KiB message.
  const auto cpu = text.find("cpu_per_byte: ");
  CHECK((cpu != std::string::npos) == (threads == 1));
  if (cpu != std::string::npos) {
    const double per_byte = std::stod(text.substr(cpu + 14));
    CHECK(per_byte > 0);
    CHECK(per_byte * 96 * 256 * 4 < 1e-2);
  }
}

TEST_CASE(
    "dtwin profile times a tensor-parallel stage as member 0 of a tp=2 group of processes, "
    "its collectives apart, and the member's GEMM shards",
    "[serial]") {
  const std::string path = "profile-tp2.yaml";
  // A device description to fit: its gemm_efficiency gets calibrated to this machine's GEMMs.
  const auto result = profile_small("tp2", 2, path, "--set cluster.device.model=h100-sxm");
  CHECK_THAT(result.output, Catch::Contains("of B or I in tensor-parallel collectives"));
  const dtwin::Profile profile = dtwin::load_profile(path);
  REQUIRE(profile.stages.size() == 1);
  const dtwin::StageSeconds& s = profile.stages[0];
  // Each pass waits in its all-reduces (2 per layer, the embedding's, the cross-entropy's 3 in F;
  // 2 per layer and the head's in B) and computes besides.
  CHECK(s.tp_forward > 0);
  CHECK(s.tp_forward < s.forward);
  CHECK(s.tp_backward > 0);
  CHECK(s.tp_backward < s.backward);
  // Gloo's threads worked on the cores during the collectives.
  CHECK(s.tp_forward_cpu > 0);
  CHECK(s.tp_forward_cpu < s.forward);
  CHECK(s.tp_backward_cpu > 0);
  CHECK(s.tp_backward_cpu < s.backward);

  // 5 layer projections and the LM head, each in F, I and W, as tp=2 shards of d_model 96.
  REQUIRE(profile.gemms.size() == 18);
  CHECK(profile.gemms[0].name == "qkv");
  CHECK(profile.gemms[0].n == 3 * 96 / 2);
  for (const dtwin::GemmPoint& g : profile.gemms) CHECK(g.seconds > 0);
  CHECK_THAT(result.output, Catch::Contains("GEMMs together: "));
  // The written description predicts the measured GEMMs' total at the fitted efficiency.
  const dtwin::DeviceDescription fitted =
      dtwin::load_device_description("profile-tp2.device.yaml", "");
  double predicted = 0, measured = 0;
  for (const dtwin::GemmPoint& g : profile.gemms) {
    predicted += dtwin::gemm_seconds(fitted, g.m, g.n, g.k, dtwin::Precision::Fp32);
    measured += g.seconds;
  }
  if (fitted.gemm_efficiency < 1) CHECK(predicted == Approx(measured).epsilon(1e-6));
  CHECK(fitted.gemm_efficiency != dtwin::load_device_description("h100-sxm", "").gemm_efficiency);
  // And the host seconds per dispatched operator measured here replace the description's.
  CHECK(profile.host_op_seconds > 0);
  CHECK(profile.host_op_seconds_no_grad > 0);
  CHECK(fitted.host_op_overhead == Approx(profile.host_op_seconds).epsilon(1e-9));
  CHECK(fitted.host_op_overhead_no_grad == Approx(profile.host_op_seconds_no_grad).epsilon(1e-9));
}

TEST_CASE(
    "dtwin profile times an expert-parallel stage as member 0 of an ep=2 group of processes, "
    "its all-to-alls apart",
    "[serial]") {
  const std::string path = "profile-moe-ep2.yaml";
  // 2 layers, the second a MoE layer: 2 of its 4 experts on each member.
  const auto result = profile_small("moe-ep2", 2, path);
  CHECK_THAT(result.output, Catch::Contains("of B or I in expert-parallel all-to-alls"));
  const dtwin::Profile profile = dtwin::load_profile(path);
  REQUIRE(profile.stages.size() == 1);
  const dtwin::StageSeconds& s = profile.stages[0];
  // F dispatches and combines (and exchanges the counts), B sends both back as gradients.
  CHECK(s.tp_forward > 0);
  CHECK(s.tp_forward < s.forward);
  CHECK(s.tp_backward > 0);
  CHECK(s.tp_backward < s.backward);
  // The 2 members computed at once on the scenario's 2 cores, which the simulator applies to its
  // 2 ranks itself: the compute was divided by the slowdown of 2 processes busy.
  REQUIRE(profile.concurrency.size() == 2);
  CHECK(profile.members_concurrency == Approx(profile.concurrency_slowdown(2)).epsilon(1e-6));
}
