// CPU-time clocks of the calling thread and of the whole process (POSIX clock_gettime).
#pragma once

#include <ctime>

namespace dtwin {

/// Seconds of `clock` (CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID, ...).
inline double clock_seconds(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

/// Seconds the calling thread has run on a core.
inline double thread_cpu_seconds() {
  return clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

/// Seconds the process's other threads have run on a core: its CPU time less the calling
/// thread's (read one after the other, so a microsecond's skew).
inline double other_threads_cpu_seconds() {
  const double process = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  return process - thread_cpu_seconds();
}

}  // namespace dtwin
