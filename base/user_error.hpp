// The one exception type for bad input that a user can cause and fix.
#pragma once

#include <stdexcept>
#include <string>

namespace dtwin {

/// Bad user input: a scenario or profile file, a `--set` override, a trace or summary file, a
/// command-line argument or an environment variable. what() is one line, shaped
/// "FILE:LINE:COL: KEY: expected WHAT, got 'VALUE'" where a place in a file is known. The CLI
/// prints it as "error: ..." and exits 2; any other exception is a failure of dtwin itself.
struct UserError : std::runtime_error {
  /// Keeps `message` on one line: control characters that came from the input (a newline or an
  /// escape in a quoted value, a stray byte that a parser quotes) become C escapes (\n, \t,
  /// \xNN).
  explicit UserError(const std::string& message);
};

}  // namespace dtwin
