// Training across hosts: ranks started by hand, one per host, with the variables torchrun or
// Slurm set (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), each host a network namespace joined to
// the others by a shaped link (tests/net_hosts.hpp).
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/cost/profile.hpp"
#include "tests/background_process.hpp"
#include "tests/net_hosts.hpp"
#include "tests/small_training.hpp"

namespace fs = std::filesystem;
using namespace dtwin::test;

namespace {

constexpr int kStorePort = 29500;  // free: each set of hosts has its own network stack

// Starts rank r of train_args(`name`-r, ...) on host r, rank 0's host holding the store. Both
// "hosts" share this machine's cores, so LOCAL_WORLD_SIZE says 2, as the launcher would.
std::vector<pid_t> start_ranks(const NetHosts& hosts, const std::string& name, int steps, int dp,
                               int pp) {
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < dp * pp; ++rank) {
    const std::string out = name + "-" + std::to_string(rank);
    fs::remove_all(out);
    ranks.push_back(
        start_dtwin(train_args(out, steps, dp, pp), out + ".log",
                    {"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(dp * pp),
                     "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=" + NetHosts::address(0),
                     "MASTER_PORT=" + std::to_string(kStorePort)},
                    hosts.name(rank)));
  }
  return ranks;
}

}  // namespace

TEST_CASE("dp=2 and pp=2 train across two hosts as on one, over 100 Mbit/s and 1 Gbit/s links") {
  const std::string rate = GENERATE("100mbit", "1gbit");
  const auto [dp, pp] = GENERATE(table<int, int>({{2, 1}, {1, 2}}));
  const std::string name = "multihost-dp" + std::to_string(dp) + "-pp" + std::to_string(pp);
  CAPTURE(rate, dp, pp);
  const auto [local, local_log] = run(train_args(name + "-local", 3, dp, pp), name + "-local.log");
  INFO(local_log);
  REQUIRE(local.code == 0);

  const NetHosts hosts(2, rate);
  const std::vector<pid_t> ranks = start_ranks(hosts, name + "-" + rate, 3, dp, pp);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string out = name + "-" + rate + "-" + std::to_string(rank);
    const auto [exit, log] = finish(ranks[rank], out + ".log", 300);
    INFO(log);
    CHECK(exit.code == 0);
  }
  // The last stage of replica 0 logs the loss (rank 0 under dp=2, rank 1 under pp=2); rank 0
  // gathers the measured timeline of both.
  const std::string reporter = name + "-" + rate + "-" + (pp == 2 ? "1" : "0");
  const std::vector<double> measured = losses(reporter), expected = losses(name + "-local");
  REQUIRE(expected.size() == 3);
  REQUIRE(measured.size() == expected.size());
  for (size_t step = 0; step < expected.size(); ++step)
    CHECK(measured[step] == Approx(expected[step]).epsilon(1e-6));
  CHECK(fs::exists(name + "-" + rate + "-0/measured.trace.json"));

  // The gradients cross the shaped link: over 100 Mbit/s a ring all-reduce of 2 ranks sends each
  // rank's whole gradient once (2·(n-1)/n of it), 4 bytes per parameter of train_args' LLaMA
  // (quickstart.yaml's vocabulary of 4096 and 6 layers, d_model 64, ffn_hidden 128).
  if (dp == 2 && rate == "100mbit") {
    const double d = 64, f = 128, vocab = 4096, layers = 6;
    const double params = 2 * vocab * d + layers * (4 * d * d + 3 * d * f + 2 * d) + d;
    const double link_s = 4 * params / (100e6 / 8);
    std::ifstream in(name + "-" + rate + "-0/measured.trace.json");
    const nlohmann::json trace = nlohmann::json::parse(in);
    int allreduces = 0;
    for (const auto& event : trace.at("traceEvents")) {
      if (event.at("ph") != "X" || event.at("args").value("kind", "") != "ALLREDUCE") continue;
      ++allreduces;
      CHECK(event["dur"].get<double>() * 1e-6 >= 0.9 * link_s);  // dur in µs
    }
    CHECK(allreduces == 2 * 3);  // each rank's, every step
  }
}

TEST_CASE("a killed remote rank stops the other host's rank within timeout_s + 5 s, naming it") {
  const NetHosts hosts(2, "1gbit");
  const std::string name = "multihost-kill";
  const std::vector<pid_t> ranks = start_ranks(hosts, name, 1000, 2, 1);
  REQUIRE(wait_for_text(name + "-0/loss.csv", "\n2,", 120));
  kill(ranks[1], SIGKILL);
  const auto [exit, log] = finish(ranks[0], name + "-0.log", kTimeout + 30);
  wait_exit(ranks[1], 5);
  INFO(log);
  CAPTURE(exit.code, exit.seconds);
  CHECK(stopped_in_time(exit));
  CHECK_THAT(log, Catch::Contains("rank 0: lost rank 1 during"));
}

TEST_CASE("malformed torchrun variables exit 2 naming the variable before any rendezvous") {
  using Case = std::pair<std::vector<std::string>, std::string>;
  const std::vector<std::string> good{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                                      "MASTER_PORT=29500"};
  auto with = [&](const std::string& entry) {
    std::vector<std::string> env = good;
    const std::string key = entry.substr(0, entry.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.rfind(key, 0) == 0; });
    env.push_back(entry);
    return env;
  };
  const auto [env, message] = GENERATE_COPY(values<Case>({
      {with("RANK=one"), "RANK: expected an integer >= 0, got 'one'"},
      {with("RANK=2"), "RANK: expected < WORLD_SIZE (2), got '2'"},
      {with("WORLD_SIZE=4"), "WORLD_SIZE: expected 2 (dp*pp*tp of"},
      {with("MASTER_PORT=70000"), "MASTER_PORT: expected an integer in 1..65535, got '70000'"},
      {with("MASTER_ADDR="), "MASTER_ADDR: expected with RANK set"},
      {with("GLOO_SOCKET_IFNAME=lo,nope0"),
       "GLOO_SOCKET_IFNAME: expected interfaces of this host "
       "separated by ',', got 'lo,nope0' ('nope0' is not one)"},
  }));
  const std::string out = "multihost-bad-env";
  const auto [exit, log] = run(train_args(out, 1, 2, 1), out + ".log", env, 60);
  INFO(log);
  CHECK(exit.code == 2);
  CHECK(exit.seconds < kTimeout);  // a rendezvous would wait for the missing rank that long
  CHECK_THAT(log, Catch::Contains(message));
  CHECK_FALSE(fs::exists(out + "/loss.csv"));
}

TEST_CASE("dtwin run across two hosts measures their link and predicts with it", "[serial]") {
  // dp=2 over 100 Mbit/s: the simulator must see the shaped link that calibration measured,
  // not the scenario's 1.25 GB/s inter-node link. Sequences of 512 tokens make the stage
  // boundary 128 KiB, ten times the shaper's burst.
  const NetHosts hosts(2, "100mbit");
  const std::string name = "multihost-run";
  std::vector<std::string> args = train_args(name, 4, 2, 1);
  args.front() = "run";
  for (const char* set : {"cluster.nodes=2", "cluster.ranks_per_device=1", "model.seq_len=512"})
    args.insert(args.end() - 3, {"--set", set});  // after train_args' own, before --data-dir -o OUT
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> rank_args = args;
    rank_args.back() = name + "-" + std::to_string(rank);  // -o
    fs::remove_all(rank_args.back());
    ranks.push_back(start_dtwin(
        rank_args, rank_args.back() + ".log",
        {"RANK=" + std::to_string(rank), "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2",
         "MASTER_ADDR=" + NetHosts::address(0), "MASTER_PORT=" + std::to_string(kStorePort)},
        hosts.name(rank)));
  }
  for (int rank = 1; rank >= 0; --rank) {
    const auto [exit, log] = finish(ranks[rank], name + "-" + std::to_string(rank) + ".log", 600);
    INFO(log);
    REQUIRE(exit.code == 0);
  }
  const std::string out = name + "-0";
  for (const char* file :
       {"profile.yaml", "predicted.trace.json", "measured.trace.json", "compare.json", "report.md"})
    CHECK(fs::exists(out + "/" + file));
  const dtwin::Profile profile = dtwin::load_profile(out + "/profile.yaml");
  const double link = 100e6 / 8;  // bytes/s
  CHECK(profile.inter_host_bandwidth > 0.5 * link);
  CHECK(profile.inter_host_bandwidth < 1.1 * link);
  // A receive posted right after a pipeline message (512 tokens x 64 fp32 values) left the
  // other way waits for its ready message in the shaper's queue behind part of that message.
  const double message = 512 * 64 * 4;  // bytes
  CHECK(profile.inter_host_queue_delay > 0);
  CHECK(profile.inter_host_queue_delay < message / link);
  CHECK(profile.allreduce_ranks == 2);
  CHECK(profile.allreduce_across_hosts);
  // The predicted all-reduce of the gradients crosses that link: at least 90% of their bytes at
  // its rate, as the measured one does.
  std::ifstream in(out + "/compare.json");
  const nlohmann::json compare = nlohmann::json::parse(in);
  const double d = 64, f = 128, vocab = 4096, layers = 6;
  const double params = 2 * vocab * d + layers * (4 * d * d + 3 * d * f + 2 * d) + d;
  for (const auto& kind : compare.at("kinds"))
    if (kind.at("kind") == "ALLREDUCE") {
      CHECK(kind.at("predicted_mean_s").get<double>() >= 0.9 * 4 * params / link);
      CHECK(kind.at("measured_mean_s").get<double>() >= 0.9 * 4 * params / link);
    }
}
