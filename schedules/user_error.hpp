// The one exception type for bad input that a user can cause and fix.
#pragma once

#include <stdexcept>

namespace dtwin {

/// Bad user input: a scenario or profile file, a `--set` override, a trace or summary file, a
/// command-line argument or an environment variable. what() is one line, shaped
/// "FILE:LINE:COL: KEY: expected WHAT, got 'VALUE'" where a place in a file is known. The CLI
/// prints it as "error: ..." and exits 2; any other exception is a failure of dtwin itself.
struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace dtwin
