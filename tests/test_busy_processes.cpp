// The processes that keep a host's cores busy while the profile measures what training's other
// ranks would change (runtime/calibrate/busy_processes.hpp).
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <thread>

#include "base/cpu_clock.hpp"
#include "runtime/calibrate/busy_processes.hpp"

namespace {

// Wall seconds over CPU seconds of this thread spinning for `cpu` CPU seconds.
double stretch(double cpu) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = dtwin::thread_cpu_seconds();
  volatile unsigned long turns = 0;
  while (dtwin::thread_cpu_seconds() - cpu_start < cpu) turns = turns + 1;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return wall / (dtwin::thread_cpu_seconds() - cpu_start);
}

}  // namespace

TEST_CASE("busy processes hold the cores while they live and are gone after") {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  {
    // Two per core: with this thread, 2n + 1 runnable on n cores, so it gets at most about
    // n / (2n + 1) of a core's time.
    const dtwin::rt::BusyProcesses busy(2 * cores);
    CHECK(stretch(0.1) > 1.5);
  }
  // Every child was reaped: none is left to wait for.
  errno = 0;
  CHECK(waitpid(-1, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  const dtwin::rt::BusyProcesses none(0);
  CHECK(waitpid(-1, nullptr, WNOHANG) == -1);
}
