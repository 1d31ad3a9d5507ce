// Hands a runtime command (run, profile, train) from `dtwin` to the dtwin-runtime executable.
#pragma once

#include <string_view>

namespace dtwin {

/// True when the command line is for dtwin-runtime: argv[1] one of kRuntimeCommands, or `plan`
/// with --run (training the best layouts needs LibTorch).
bool needs_runtime(int argc, char** argv);

/// Replaces this process with dtwin-runtime, found beside this executable, given `argv` (argv[0]
/// replaced by its path). Returns only on failure: prints "error: cannot start PATH: REASON" and
/// returns 1.
int exec_runtime(char** argv);

}  // namespace dtwin
