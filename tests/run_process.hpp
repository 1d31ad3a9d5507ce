// Runs the dtwin executable as a child process, as a user would.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace dtwin::test {

struct ProcessResult {
  int exit_code;
  std::string output;  ///< stdout and stderr together
};

/// Runs `command_line` through the shell, stderr joined to stdout, and waits for it.
inline ProcessResult run_process(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  ProcessResult result{0, ""};
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe))
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// Runs `DTWIN_EXE args` through the shell and waits for it.
inline ProcessResult run_dtwin(const std::string& args) {
  return run_process(std::string(DTWIN_EXE) + " " + args);
}

}  // namespace dtwin::test
