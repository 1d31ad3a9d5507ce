// `dtwin train` end to end: real processes, Gloo over loopback sockets, the King James Bible corpus
// and its SentencePiece tokenizer (scripts/fetch_data.sh must have run). Sizes are shrunk, the
// mechanism is not.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tests/run_process.hpp"
#include "tests/small_training.hpp"

using dtwin::test::losses;
using dtwin::test::run_dtwin;

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";
const std::string kDataDir = std::string(DTWIN_SOURCE_DIR) + "/data";

// A small LLaMA (quickstart's vocabulary and 6 layers, narrower) for 3 fp32 steps.
const std::string kSmall =
    " --set model.d_model=64 --set model.n_heads=4 --set model.ffn_hidden=128"
    " --set model.seq_len=64 --set training.steps=3 --set training.precision=fp32"
    " --data-dir " +
    kDataDir;

std::string layout_args(int dp, int pp, int m, const std::string& schedule, int v = 1,
                        const std::string& sync = "allreduce") {
  return " --set layout.dp=" + std::to_string(dp) + " --set layout.pp=" + std::to_string(pp) +
         " --set layout.microbatches=" + std::to_string(m) + " --set layout.schedule=" + schedule +
         " --set layout.virtual_stages=" + std::to_string(v) + " --set layout.dp_sync=" + sync +
         " --set cluster.ranks_per_device=" + std::to_string(dp * pp);
}

// Trains into train-<name>-<pid>: CTest runs each test case as its own process, several at once,
// and each computes the single-rank reference, so the folders must not be shared.
std::vector<double> train(const std::string& name, const std::string& args) {
  const std::string dir = "train-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  const auto result = run_dtwin("train " + kQuickstart + kSmall + args + " -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::vector<double> values = losses(dir);
  std::filesystem::remove_all(dir);  // kept only when the run failed, to look at
  return values;
}

const std::vector<double>& single_rank_losses() {
  static const std::vector<double> reference = train("single", layout_args(1, 1, 4, "1f1b"));
  return reference;
}

void check_equal(const std::vector<double>& losses) {
  const std::vector<double>& reference = single_rank_losses();
  REQUIRE(losses.size() == reference.size());
  for (size_t i = 0; i < losses.size(); ++i) {
    CAPTURE(i, losses[i], reference[i]);
    CHECK(std::abs(losses[i] - reference[i]) <= 1e-5 * std::abs(reference[i]));
  }
}

}  // namespace

TEST_CASE("pipeline schedules train the single-rank model: pp=3 GPipe, 1F1B, ZB-H1") {
  REQUIRE(single_rank_losses().size() == 3);
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
    CAPTURE(schedule);
    check_equal(train(std::string("pp3-") + schedule, layout_args(1, 3, 4, schedule)));
  }
}

TEST_CASE("interleaved 1F1B, pp=2 with v=3, trains the single-rank model") {
  check_equal(train("pp2-interleaved", layout_args(1, 2, 4, "interleaved-1f1b", 3)));
}

TEST_CASE("data parallelism trains the single-rank model: dp=2 allreduce and gather-scatter") {
  check_equal(train("dp2-allreduce", layout_args(2, 1, 2, "1f1b")));
  check_equal(train("dp2-gather-scatter", layout_args(2, 1, 2, "1f1b", 1, "gather-scatter")));
}

TEST_CASE("hybrid dp=2 x pp=2 trains the single-rank model", "[threads]") {
  check_equal(train("dp2-pp2", layout_args(2, 2, 2, "1f1b")));
}

TEST_CASE("weight-average keeps every replica's weights identical after each step") {
  const std::string dir = "train-dp2-weight-average";
  std::filesystem::remove_all(dir);
  const auto result =
      run_dtwin("train " + kQuickstart + kSmall +
                layout_args(2, 2, 2, "1f1b", 1, "weight-average") + " --digests -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  // digests.csv rows: step,rank,stage,digest — replicas of a stage must agree at every step.
  std::ifstream in(dir + "/digests.csv");
  std::string line;
  std::map<std::pair<int, int>, std::set<std::string>> digests;  // (step, stage) -> digests
  int rows = 0;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string step, rank, stage, digest;
    std::getline(fields, step, ',');
    std::getline(fields, rank, ',');
    std::getline(fields, stage, ',');
    std::getline(fields, digest, ',');
    digests[{std::stoi(step), std::stoi(stage)}].insert(digest);
    ++rows;
  }
  CHECK(rows == 3 * 4);  // 3 steps x 4 ranks, one stage each
  for (const auto& [key, values] : digests) {
    CAPTURE(key.first, key.second);
    CHECK(values.size() == 1);
  }
}

TEST_CASE("resume from a checkpoint reproduces the uninterrupted run exactly") {
  const std::string args = layout_args(1, 3, 4, "1f1b") + " --set training.checkpoint_every=2";
  const std::vector<double> full = train("resume-full", args + " --set training.steps=4");
  const std::string dir = "train-resume-split";
  std::filesystem::remove_all(dir);
  auto first =
      run_dtwin("train " + kQuickstart + kSmall + args + " --set training.steps=2 -o " + dir);
  REQUIRE(first.exit_code == 0);
  auto second = run_dtwin("train " + kQuickstart + kSmall + args +
                          " --set training.steps=4 --resume -o " + dir);
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  CHECK_THAT(second.output, Catch::Contains("step 3/4"));
  CHECK_THAT(second.output, !Catch::Contains("step 1/4"));
  CHECK(losses(dir) == full);
}

TEST_CASE(
    "the quickstart scenario trains on the King James Bible: loss falls well below ln(vocab)") {
  const std::string dir = "train-quickstart";
  std::filesystem::remove_all(dir);
  const auto result = run_dtwin("train " + kQuickstart + " --data-dir " + kDataDir + " -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const std::vector<double> values = losses(dir);
  REQUIRE(values.size() == 150);
  CHECK(values.front() == Approx(std::log(4096.0)).epsilon(0.05));  // untrained: ln V
  // The mean of the last 10 steps, 2 nats below ln V = 8.32.
  double tail = 0;
  for (size_t i = values.size() - 10; i < values.size(); ++i) tail += values[i] / 10;
  CHECK(tail < std::log(4096.0) - 2);
  for (const char* file :
       {"/measured.trace.json", "/measured.summary.json", "/checkpoints/step-150/stage-2.pt"})
    CHECK(std::filesystem::exists(dir + file));
}
