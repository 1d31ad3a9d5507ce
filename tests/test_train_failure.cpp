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

}  // namespace

TEST_CASE("killing a rank mid-step stops every rank and the launcher, naming it") {
  const double timeout_s = 10;
  const std::string log = "train-kill.log";
  std::filesystem::remove(log);
  std::filesystem::remove_all("train-kill");
  const pid_t launcher = fork();
  if (launcher == 0) {
    freopen(log.c_str(), "w", stdout);
    dup2(fileno(stdout), 2);
    const std::string data = std::string("--data-dir=") + DTWIN_SOURCE_DIR + "/data";
    execl(DTWIN_EXE, DTWIN_EXE, "train", DTWIN_SOURCE_DIR "/scenarios/quickstart.yaml", "--set",
          "training.steps=1000", "--set", "runtime.timeout_s=10", "--set", "model.d_model=64",
          "--set", "model.n_heads=4", "--set", "model.ffn_hidden=128", data.c_str(), "-o",
          "train-kill", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for training to be under way, then kill rank 1 without warning.
  const auto start = Clock::now();
  while (read_all(log).find("step 2/") == std::string::npos) {
    REQUIRE(Clock::now() - start < std::chrono::seconds(120));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const pid_t victim = rank_pid(launcher, 1);
  REQUIRE(victim > 0);
  kill(victim, SIGKILL);
  const auto killed = Clock::now();

  int status = 0;
  while (waitpid(launcher, &status, WNOHANG) == 0) {
    if (Clock::now() - killed > std::chrono::seconds(static_cast<int>(timeout_s) + 30)) {
      kill(launcher, SIGKILL);
      FAIL("the launcher did not stop");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  const std::string output = read_all(log);
  INFO(output);
  CHECK(seconds <= timeout_s + 5);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK_THAT(output, Catch::Contains("launcher: rank 1 was killed by signal 9"));
  // Both surviving ranks name it.
  CHECK_THAT(output, Catch::Contains("rank 0: lost rank 1 during"));
  CHECK_THAT(output, Catch::Contains("rank 2: lost rank 1 during"));
}
