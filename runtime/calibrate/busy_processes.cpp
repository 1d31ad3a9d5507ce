#include "runtime/calibrate/busy_processes.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dtwin::rt {
namespace {

// The child's whole life: only async-signal-safe calls, as a fork of a threaded process must.
[[noreturn]] void spin() {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  volatile unsigned long turns = 0;
  for (;;) turns = turns + 1;
}

}  // namespace

BusyProcesses::BusyProcesses(int count) {
  for (int i = 0; i < count; ++i) {
    const pid_t pid = fork();
    if (pid == 0) spin();
    if (pid < 0) {
      const std::string cause = std::strerror(errno);
      stop();
      throw std::runtime_error("cannot start a busy process: " + cause);
    }
    children_.push_back(pid);
  }
}

BusyProcesses::~BusyProcesses() {
  stop();
}

void BusyProcesses::stop() {
  for (pid_t pid : children_) kill(pid, SIGKILL);
  for (pid_t pid : children_) waitpid(pid, nullptr, 0);
  children_.clear();
}

}  // namespace dtwin::rt
