// Hands a runtime command (run, profile, train) from `dtwin` to the dtwin-runtime executable.
#pragma once

#include <string>
#include <string_view>

namespace dtwin {

/// True when the command line is for dtwin-runtime: argv[1] one of kRuntimeCommands, or `plan`
/// with --run (training the best layouts needs LibTorch).
bool needs_runtime(int argc, char** argv);

/// The path of the executable `name` in this executable's folder (read from /proc/self/exe).
std::string beside_this_executable(std::string_view name);

/// Replaces this process with dtwin-runtime, found beside this executable, given `argv` (argv[0]
/// replaced by its path). Returns only on failure: prints "error: cannot start PATH: REASON" and
/// returns 1.
int exec_runtime(char** argv);

}  // namespace dtwin
