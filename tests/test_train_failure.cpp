// A rank that dies mid-step: the other ranks and the launcher stop within timeout_s + 5 s,
// exit non-zero, and name the lost rank.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The pid of the child of `parent` whose environment has RANK=<rank>, or 0.
pid_t rank_pid(pid_t parent, int rank) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    pid_t ppid = 0;
    stat >> pid >> comm >> state >> ppid;
    if (ppid != parent) continue;
    const std::string environ = read_all((entry.path() / "environ").string());
    if (environ.find(std::string("RANK=") + std::to_string(rank) + '\0') != std::string::npos &&
        environ.find("LOCAL_RANK=" + std::to_string(rank)) != std::string::npos)
      return std::stoi(name);
  }
  return 0;
}

struct Outcome {
  double seconds;  ///< from the signal to the launcher's exit
  int exit_code;
  std::string output;
};

// Starts a quickstart training, sends `signal` to rank 1 once steps are under way, and waits
// for the launcher to exit.
Outcome signal_rank_1(int signal, double timeout_s, const std::string& name) {
  const std::string log = name + ".log";
  std::filesystem::remove(log);
  std::filesystem::remove_all(name);
  const std::string timeout = "runtime.timeout_s=" + std::to_string(static_cast<int>(timeout_s));
  const pid_t launcher = fork();
  if (launcher == 0) {
    freopen(log.c_str(), "w", stdout);
    dup2(fileno(stdout), 2);
    const std::string data = std::string("--data-dir=") + DTWIN_SOURCE_DIR + "/data";
    execl(DTWIN_EXE, DTWIN_EXE, "train", DTWIN_SOURCE_DIR "/scenarios/quickstart.yaml", "--set",
          "training.steps=1000", "--set", timeout.c_str(), "--set", "model.d_model=64", "--set",
          "model.n_heads=4", "--set", "model.ffn_hidden=128", data.c_str(), "-o", name.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto start = Clock::now();
  while (read_all(log).find("step 2/") == std::string::npos) {
    if (Clock::now() - start > std::chrono::seconds(120)) {
      kill(launcher, SIGKILL);
      return {-1, -1, read_all(log)};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const pid_t victim = rank_pid(launcher, 1);
  if (victim > 0) kill(victim, signal);
  const auto sent = Clock::now();
  int status = 0;
  while (waitpid(launcher, &status, WNOHANG) == 0) {
    if (Clock::now() - sent > std::chrono::seconds(static_cast<int>(timeout_s) + 30)) {
      kill(launcher, SIGKILL);
      waitpid(launcher, &status, 0);
      return {-1, -1, read_all(log)};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - sent).count();
  return {seconds, WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_all(log)};
}

}  // namespace

TEST_CASE("killing a rank mid-step stops every rank and the launcher, naming it") {
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

TEST_CASE("a stalled rank (SIGSTOP) makes the others time out naming it and the launcher kill it") {
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
