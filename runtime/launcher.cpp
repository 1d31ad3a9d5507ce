#include "runtime/launcher.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/clock.hpp"
#include "runtime/process_groups.hpp"
#include "runtime/rank_env.hpp"
#include "runtime/spawn_self.hpp"

namespace dtwin::rt {
namespace {

pid_t spawn_rank(const std::vector<std::string>& args, int rank, int world_size, int port) {
  return spawn_self(
      args,
      {"RANK=" + std::to_string(rank), "LOCAL_RANK=" + std::to_string(rank),
       "WORLD_SIZE=" + std::to_string(world_size), "LOCAL_WORLD_SIZE=" + std::to_string(world_size),
       "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port), "DTWIN_STORE_HOSTED=1"},
      nullptr, "rank " + std::to_string(rank));
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

volatile std::sig_atomic_t stop_signal = 0;  // SIGINT or SIGTERM received by the launcher

void remember_stop_signal(int signal) {
  stop_signal = signal;
}

// A rank stopped by SIGINT or SIGTERM says so and exits 1 (write(2) and _exit(2) are
// async-signal-safe).
int handler_rank = -1;
void exit_on_signal(int signal) {
  char line[96];
  const int n = std::snprintf(line, sizeof line, "error: rank %d: stopped by %s\n", handler_rank,
                              signal == SIGINT ? "SIGINT" : "SIGTERM");
  if (n > 0) {
    [[maybe_unused]] const ssize_t written = ::write(2, line, static_cast<size_t>(n));
  }
  ::_exit(1);
}

void install(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

void exit_on_stop_signals(int rank) {
  handler_rank = rank;
  install(exit_on_signal);
}

int launch_local(const std::vector<std::string>& args, int world_size, double timeout_s) {
  const int requested_port = master_port_from_environment().value_or(0);  // 0: a free port
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = tcp_store("127.0.0.1", requested_port, true, timeout_s);
  } catch (const std::runtime_error& error) {
    throw std::runtime_error(std::string("launcher: ") + error.what());
  }
  const int port = store->getPort();
  install(remember_stop_signal);

  std::map<pid_t, int> running;  // pid -> rank
  for (int rank = 0; rank < world_size; ++rank)
    running[spawn_rank(args, rank, world_size, port)] = rank;

  int failed = -1;           // first rank to fail
  int died = -1;             // first rank killed by a signal we did not send
  int stopped_by = 0;        // the signal that stopped the launcher
  std::vector<int> stalled;  // ranks we had to kill
  double deadline = 0;
  while (!running.empty()) {
    if (stop_signal && !stopped_by) {
      stopped_by = stop_signal;
      std::fprintf(stderr, "launcher: received %s; stopping the ranks\n",
                   stopped_by == SIGINT ? "SIGINT" : "SIGTERM");
      for (auto [pid, rank] : running) kill(pid, SIGTERM);
      deadline = wall_seconds() + timeout_s + 5;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0 && running.count(pid)) {
      const int rank = running[pid];
      running.erase(pid);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (stopped_by) continue;  // each stopped rank says so itself
      if (!ok) std::fprintf(stderr, "launcher: rank %d %s\n", rank, describe(status).c_str());
      if (WIFSIGNALED(status) && died < 0) died = rank;
      if (!ok && failed < 0) {
        failed = rank;
        deadline = wall_seconds() + timeout_s + 5;
      }
      continue;
    }
    if ((failed >= 0 || stopped_by) && wall_seconds() > deadline) {
      const std::string after =
          stopped_by ? "the stop signal" : "rank " + std::to_string(failed) + " failed";
      for (auto [stuck, rank] : running) {
        std::fprintf(stderr, "launcher: rank %d still running %.0f s after %s; killing it\n", rank,
                     timeout_s + 5, after.c_str());
        kill(stuck, SIGKILL);
        waitpid(stuck, &status, 0);
        stalled.push_back(rank);
      }
      running.clear();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (stopped_by) {
    std::fprintf(stderr, "launcher: training stopped by %s\n",
                 stopped_by == SIGINT ? "SIGINT" : "SIGTERM");
    return 1;
  }
  if (failed < 0) return 0;
  if (died >= 0)
    std::fprintf(stderr, "launcher: training failed: rank %d died\n", died);
  else if (!stalled.empty())
    std::fprintf(stderr, "launcher: training failed: rank %d stalled and was killed\n",
                 stalled.front());
  else
    std::fprintf(stderr, "launcher: training failed: rank %d failed first\n", failed);
  return 1;
}

}  // namespace dtwin::rt
