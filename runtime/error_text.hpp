// The message of an exception for a one-line report: c10's errors without their C++ backtrace.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace dtwin::rt {

/// what() of `error`, or c10::Error::what_without_backtrace() for LibTorch's and c10d's errors
/// (whose what() appends a stack of frames).
inline std::string error_text(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error))
    return c10_error->what_without_backtrace();
  return error.what();
}

}  // namespace dtwin::rt
