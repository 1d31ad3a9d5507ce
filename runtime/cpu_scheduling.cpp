#include "runtime/cpu_scheduling.hpp"

#include <dirent.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>

namespace dtwin::rt {

bool schedule_threads_as_batch() {
  const sched_param priority{0};
  int failure = sched_setscheduler(0, SCHED_BATCH, &priority) == 0 ? 0 : errno;
  // Threads that LibTorch or its libraries started before main() do not inherit the caller's
  // policy: set each one (Linux applies sched_setscheduler to the one thread a tid names).
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (const dirent* task = readdir(tasks)) {
      const int tid = std::atoi(task->d_name);
      // A thread that ended meanwhile (ESRCH) needs nothing.
      if (tid > 0 && sched_setscheduler(tid, SCHED_BATCH, &priority) != 0 && errno != ESRCH &&
          failure == 0)
        failure = errno;
    }
    closedir(tasks);
  }
  errno = failure;
  return failure == 0;
}

}  // namespace dtwin::rt
