// The runtime's processes run their threads under SCHED_BATCH (runtime/cpu_scheduling.hpp).
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "runtime/cpu_scheduling.hpp"
#include "tests/fresh_process.hpp"

namespace {

int policy_of(pid_t tid) {
  return sched_getscheduler(tid);
}

pid_t this_tid() {
  return static_cast<pid_t>(syscall(SYS_gettid));
}

}  // namespace

TEST_CASE("every thread of the process, and each one started after, runs under SCHED_BATCH") {
  // In a child: the policy would otherwise stay on this test process's threads.
  const std::vector<double> policies = dtwin::test::in_fresh_process([] {
    std::atomic<pid_t> earlier_tid{0};
    std::atomic<bool> release{false};
    std::thread earlier([&] {
      earlier_tid = this_tid();
      while (!release) std::this_thread::yield();
    });
    while (earlier_tid == 0) std::this_thread::yield();
    const double before = policy_of(0);
    const double set = dtwin::rt::schedule_threads_as_batch() ? 1 : 0;
    const double caller = policy_of(0), other = policy_of(earlier_tid);
    double later = -1;
    std::thread([&] { later = policy_of(0); }).join();
    release = true;
    earlier.join();
    return std::vector<double>{before, set, caller, other, later};
  });
  REQUIRE(policies.size() == 5);
  CHECK(policies[0] == SCHED_OTHER);
  CHECK(policies[1] == 1);
  CHECK(policies[2] == SCHED_BATCH);  // the caller
  CHECK(policies[3] == SCHED_BATCH);  // a thread that was running already
  CHECK(policies[4] == SCHED_BATCH);  // a thread started afterwards inherits it
}
