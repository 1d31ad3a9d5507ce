// Runs a computation in a forked child: SimGrid allows one engine per process, and each
// simulation test needs its own.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <stdexcept>
#include <vector>

namespace dtwin::test {

/// Forks, runs `fn` in the child, and returns the numbers it produced. Throws
/// std::runtime_error if the child crashes or returns nothing.
inline std::vector<double> in_fresh_process(const std::function<std::vector<double>()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::vector<double> values = fn();
    const ssize_t size = static_cast<ssize_t>(values.size() * sizeof(double));
    const bool ok = write(fds[1], values.data(), size) == size;
    close(fds[1]);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  std::vector<double> values;
  double value;
  while (read(fds[0], &value, sizeof value) == sizeof value) values.push_back(value);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || values.empty())
    throw std::runtime_error("the child process failed");
  return values;
}

}  // namespace dtwin::test
