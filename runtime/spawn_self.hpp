// Starting this executable again as a child process: the launcher's ranks and the profiler's
// compute probes.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace dtwin::rt {

/// Starts /proc/self/exe with the arguments `args` (after argv[0]) and this process's environment,
/// where each `extra_env` entry ("NAME=value") replaces the variable NAME or adds it, applying
/// `actions` (nullptr: the child inherits the descriptors).
/// Returns the child's pid. Throws std::runtime_error "cannot start WHAT" if posix_spawn fails.
pid_t spawn_self(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
                 const posix_spawn_file_actions_t* actions, const std::string& what);

}  // namespace dtwin::rt
