// Runs another program (a plot script, `dtwin simulate`) as a child and waits for it, without a
// shell.
#pragma once

#include <string>
#include <vector>

namespace dtwin {

/// Runs `words[0]` with arguments words[1...] (posix_spawnp, searched on PATH when it has no
/// slash, with this process's environment and standard streams) and waits for it. Returns true
/// when it exited with status 0; otherwise prints "warning: <command> failed: <reason>" to stderr
/// (it could not start, exited non-zero or died of a signal) and returns false. Never throws.
bool run_child(std::vector<std::string> words);

}  // namespace dtwin
