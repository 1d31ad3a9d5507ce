// Runs the matplotlib scripts of plots/ with the project's Python, without a shell.
#pragma once

#include <string>
#include <vector>

namespace dtwin {

/// Runs `python script args...` (posix_spawnp, searched on PATH when `python` has no slash, with
/// this process's environment and standard streams) and waits for it. Returns true when it
/// exited with status 0; otherwise prints "warning: <command> failed: <reason>" to stderr (it
/// could not start, exited non-zero or died of a signal) and returns false. Never throws.
bool run_python_script(const std::string& python, const std::string& script,
                       const std::vector<std::string>& args);

}  // namespace dtwin
