// Hands a runtime command (run, profile, train) from `dtwin` to the dtwin-runtime executable.
#pragma once

#include <string_view>

namespace dtwin {

/// True when `name` is one of kRuntimeCommands.
bool is_runtime_command(std::string_view name);

/// Replaces this process with dtwin-runtime, found beside this executable, given `argv` (argv[0]
/// replaced by its path). Returns only on failure: prints "error: cannot start PATH: REASON" and
/// returns 1.
int exec_runtime(char** argv);

}  // namespace dtwin
