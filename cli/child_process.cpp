#include "cli/child_process.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <iostream>

extern char** environ;

namespace dtwin {
namespace {

// Why a child that waitpid reported as `status` did not succeed ("" when it exited with 0).
std::string failure_of(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status) == 0 ? "" : "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

}  // namespace

bool run_child(std::vector<std::string> words) {
  std::vector<char*> argv;
  std::string command;
  for (std::string& word : words) {
    argv.push_back(word.data());
    command += (command.empty() ? "" : " ") + word;
  }
  argv.push_back(nullptr);

  std::string failure;
  pid_t pid = 0;
  if (const int error = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ))
    failure = std::string("cannot start: ") + std::strerror(error);
  else {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) {
        failure = std::string("cannot wait: ") + std::strerror(errno);
        break;
      }
    if (failure.empty()) failure = failure_of(status);
  }
  if (failure.empty()) return true;
  std::cerr << "warning: " << command << " failed: " << failure << "\n";
  return false;
}

}  // namespace dtwin
