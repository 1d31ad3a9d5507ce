// The error of a configuration file (scenario, profile, device description) that cannot be read.
#pragma once

#include "base/user_error.hpp"

namespace dtwin {

/// A configuration that cannot be read. what() is the complete one-line message, either
/// "FILE:LINE:COL: KEY: expected WHAT, got 'VALUE'" or, for a value given on the command line,
/// "--set KEY=VALUE: KEY: expected WHAT, got 'VALUE'". A UserError (exit 2 in the CLI).
struct ConfigError : UserError {
  using UserError::UserError;
};

}  // namespace dtwin
