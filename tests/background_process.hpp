// Runs `dtwin` in the background with its output in a log file, so that a test can act on it
// while it runs (signal it, kill one of its ranks) and time how it stops.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace dtwin::test {

using Clock = std::chrono::steady_clock;

/// The whole file at `path` ("" when it cannot be opened).
inline std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Starts the executable `exe` with `args`, the variables `env` ("NAME=value") added to this
/// process's environment, and stdout and stderr appended to `log` (emptied first); inside the
/// network namespace `netns` (made by `ip netns add`) when one is named. Returns its pid; the
/// child exits 126 when it cannot enter the namespace, 127 when it cannot start `exe`.
inline pid_t start_program(const std::string& exe, const std::vector<std::string>& args,
                           const std::string& log, const std::vector<std::string>& env = {},
                           const std::string& netns = "") {
  std::filesystem::remove(log);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(log.c_str(), "a", stdout)) _exit(127);
    if (!netns.empty()) {
      const int fd = open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
        std::printf("cannot enter network namespace %s\n", netns.c_str());
        _exit(126);
      }
    }
    dup2(fileno(stdout), 2);
    for (const std::string& entry : env) putenv(const_cast<char*>(entry.c_str()));
    std::vector<char*> argv{const_cast<char*>(exe.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

/// start_program of DTWIN_EXE.
inline pid_t start_dtwin(const std::vector<std::string>& args, const std::string& log,
                         const std::vector<std::string>& env = {}, const std::string& netns = "") {
  return start_program(DTWIN_EXE, args, log, env, netns);
}

/// Waits until `log` contains `text`; false after `limit_s` seconds.
inline bool wait_for_text(const std::string& log, const std::string& text, double limit_s) {
  const auto start = Clock::now();
  while (read_all(log).find(text) == std::string::npos) {
    if (std::chrono::duration<double>(Clock::now() - start).count() > limit_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

/// How a background process ended.
struct Exit {
  int code = -1;        ///< its exit code; -1 when a signal ended it or it was still running
  double seconds = -1;  ///< from the call to its exit; -1 when it outlived `limit_s` (killed)
};

/// Waits up to `limit_s` seconds for `pid` to exit, then kills it with SIGKILL.
inline Exit wait_exit(pid_t pid, double limit_s) {
  const auto start = Clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::duration<double>(Clock::now() - start).count() > limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          std::chrono::duration<double>(Clock::now() - start).count()};
}

/// The state letter of process `pid` in /proc ('R', 'S', 'Z', ...), or 0 when there is none.
inline char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string id, comm;
  char state = 0;
  stat >> id >> comm >> state;
  return stat ? state : 0;
}

/// Children of `parent` (their pids).
inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    pid_t ppid = 0;
    stat >> pid >> comm >> state >> ppid;
    if (ppid == parent) children.push_back(std::stoi(name));
  }
  return children;
}

/// The pid of the child of `parent` whose environment has RANK=<rank>, or 0.
inline pid_t rank_pid(pid_t parent, int rank) {
  for (pid_t child : children_of(parent)) {
    const std::string environ = read_all("/proc/" + std::to_string(child) + "/environ");
    if (environ.find(std::string("RANK=") + std::to_string(rank) + '\0') != std::string::npos &&
        environ.find("LOCAL_RANK=" + std::to_string(rank)) != std::string::npos)
      return child;
  }
  return 0;
}

}  // namespace dtwin::test
