// A rank that dies mid-step: the other ranks and the launcher stop within timeout_s + 5 s,
// exit non-zero, and name the lost rank.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/background_process.hpp"

namespace {

using namespace dtwin::test;

struct Outcome {
  double seconds;  ///< from the signal to the launcher's exit
  int exit_code;
  std::string output;
};

// Starts a quickstart training, sends `signal` to rank 1 once steps are under way, and waits
// for the launcher to exit.
Outcome signal_rank_1(int signal, double timeout_s, const std::string& name) {
  const std::string log = name + ".log";
  std::filesystem::remove_all(name);
  const std::string timeout = "runtime.timeout_s=" + std::to_string(static_cast<int>(timeout_s));
  const pid_t launcher = start_dtwin(
      {"train", DTWIN_SOURCE_DIR "/scenarios/quickstart.yaml", "--set", "training.steps=1000",
       "--set", timeout, "--set", "model.d_model=64", "--set", "model.n_heads=4", "--set",
       "model.ffn_hidden=128", std::string("--data-dir=") + DTWIN_SOURCE_DIR + "/data", "-o", name},
      log);
  if (!wait_for_text(log, "step 2/", 120)) {
    wait_exit(launcher, 0);
    return {-1, -1, read_all(log)};
  }
  const pid_t victim = rank_pid(launcher, 1);
  if (victim > 0) kill(victim, signal);
  const Exit exit = wait_exit(launcher, timeout_s + 30);
  return {exit.seconds, exit.code, read_all(log)};
}

}  // namespace

TEST_CASE("killing a rank mid-step stops every rank and the launcher, naming it", "[threads]") {
  const double timeout_s = 10;
  const Outcome outcome = signal_rank_1(SIGKILL, timeout_s, "train-kill");
  INFO(outcome.output);
  REQUIRE(outcome.seconds >= 0);
  CHECK(outcome.seconds <= timeout_s + 5);
  CHECK(outcome.exit_code == 1);
  CHECK_THAT(outcome.output, Catch::Contains("launcher: rank 1 was killed by signal 9"));
  // Both surviving ranks name it, and so does the launcher's verdict.
  CHECK_THAT(outcome.output, Catch::Contains("rank 0: lost rank 1 during"));
  CHECK_THAT(outcome.output, Catch::Contains("rank 2: lost rank 1 during"));
  CHECK_THAT(outcome.output, Catch::Contains("training failed: rank 1 died"));
}

TEST_CASE("a stalled rank (SIGSTOP) makes the others time out naming it and the launcher kill it",
          "[threads]") {
  const double timeout_s = 5;
  const Outcome outcome = signal_rank_1(SIGSTOP, timeout_s, "train-stall");
  INFO(outcome.output);
  REQUIRE(outcome.seconds >= 0);
  CHECK(outcome.exit_code == 1);
  // The others give up after timeout_s; the launcher waits timeout_s + 5 s more, then kills.
  CHECK(outcome.seconds <= 2 * timeout_s + 5 + 5);
  CHECK_THAT(outcome.output, Catch::Contains("rank 0: lost rank 1 during"));
  CHECK_THAT(outcome.output, Catch::Contains("rank 2: lost rank 1 during"));
  CHECK_THAT(outcome.output, Catch::Contains("training failed: rank 1 stalled and was killed"));
}
