// Bytes on the wire across four hosts (network namespaces joined by shaped links,
// tests/net_hosts.hpp): for each data-parallel variant, the gradient bytes the runtime counts at
// its communicator against the simulator's prediction, and each host's interface counters
// against both (docs/bytes-on-the-wire.md).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/background_process.hpp"
#include "tests/net_hosts.hpp"
#include "tests/small_training.hpp"

namespace fs = std::filesystem;
using namespace dtwin::test;

namespace {

constexpr int kHosts = 4;
// Ethernet (14), IPv4 (20) and TCP with the timestamp option (32) headers of every frame the
// kernel counts; the counters include them (docs/bytes-on-the-wire.md).
constexpr double kFrameHeaderBytes = 14 + 20 + 32;

// A small BERT on kjv-books (the shipped task), dp 4, one rank per host, batch 16.
std::vector<std::string> scenario_args(const std::string& command, const std::string& sync,
                                       bool buckets, const std::string& out) {
  std::vector<std::string> args{command, DTWIN_SOURCE_DIR "/scenarios/bert-kjv-dp4-4host.yaml"};
  for (const std::string& set : std::vector<std::string>{
           "model.d_model=32", "model.ffn_hidden=64", "model.n_layers=1", "training.steps=3",
           "training.warmup_steps=0", "layout.micro_batch_size=4", "layout.dp_sync=" + sync,
           std::string("layout.overlap_grad_reduce=") + (buckets ? "true" : "false"),
           "layout.bucket_size=512KB", "runtime.timeout_s=60"}) {
    args.push_back("--set");
    args.push_back(set);
  }
  if (command == "train") args.push_back(std::string("--data-dir=") + DTWIN_SOURCE_DIR "/data");
  args.insert(args.end(), {"-o", out});
  return args;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE(
    "on four hosts the communicator counts the simulator's DP bytes, and the interfaces add "
    "headers",
    "[serial]") {
  const auto [sync, buckets] = GENERATE(table<std::string, bool>(
      {{"gather-scatter", false}, {"allreduce", false}, {"allreduce", true}}));
  CAPTURE(sync, buckets);
  const std::string name = "four-host-" + sync + (buckets ? "-buckets" : "");
  const NetHosts hosts(kHosts, "100mbit");
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < kHosts; ++rank) {
    const std::string out = name + "-" + std::to_string(rank);
    fs::remove_all(out);
    ranks.push_back(start_dtwin(
        scenario_args("train", sync, buckets, out), out + ".log",
        {"RANK=" + std::to_string(rank), "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4",
         "MASTER_ADDR=" + NetHosts::address(0), "MASTER_PORT=29500"},
        hosts.name(rank)));
  }
  for (int rank = kHosts - 1; rank >= 0; --rank) {
    const auto [exit, log] = finish(ranks[rank], name + "-" + std::to_string(rank) + ".log", 300);
    INFO(log);
    REQUIRE(exit.code == 0);
  }
  const std::string folder = name + "-0", simulated = name + "-sim";
  const auto [simulate, simulate_log] =
      run(scenario_args("simulate", sync, buckets, simulated), simulated + ".log");
  INFO(simulate_log);
  REQUIRE(simulate.code == 0);
  for (const char* file : {"predicted.summary.json", "predicted.trace.json"})
    fs::copy_file(simulated + "/" + file, folder + "/" + file,
                  fs::copy_options::overwrite_existing);
  const auto [compare, compare_log] = run({"compare", folder}, folder + "-compare.log");
  INFO(compare_log);
  REQUIRE(compare.code == 0);

  const nlohmann::json rows = read_json(folder + "/compare.json").at("dp_bytes");
  REQUIRE(rows.size() == kHosts);
  double predicted_sum = 0, counted_sum = 0;
  for (const auto& row : rows) {
    CAPTURE(row.dump());
    const double predicted = row.at("predicted_sent_bytes"), counted = row.at("counted_sent_bytes");
    predicted_sum += predicted;
    counted_sum += counted;
    // Buckets too: the simulator buckets an encoder's parameters as the runtime does.
    CHECK(counted == predicted);
    CHECK(row.at("counted_received_bytes") == row.at("predicted_received_bytes"));
    // The interface carries the counted bytes, one header per frame and, beside them, the
    // runtime's other messages (Gloo's per-message headers, the start times and the loss, the
    // store's heartbeats), a few hundred bytes per step here.
    for (const char* way : {"sent", "received"}) {
      const double on_wire = row.at(std::string("interface_") + way + "_bytes");
      const double frames = row.at(std::string("interface_") + way + "_packets");
      const double gradients = row.at(std::string("counted_") + way + "_bytes");
      const double others = on_wire - frames * kFrameHeaderBytes - gradients;
      CAPTURE(way, on_wire, frames, gradients, others);
      CHECK(others >= 0);
      CHECK(others <= 0.005 * gradients + 4096);
    }
  }
  CHECK(counted_sum == predicted_sum);  // 2(n-1) buffers in all
  CHECK_THAT(read_all(folder + "/report.md"), Catch::Contains("interface sent (frames)"));
}
