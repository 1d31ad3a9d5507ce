// Shared by the libFuzzer targets: the input contract of every reader, and a file to hand the
// readers that take a path.
#pragma once

#include <unistd.h>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <string>

#include "base/user_error.hpp"

namespace dtwin::fuzz {

/// Runs `read` on one input. The contract: it returns, or throws UserError (dtwin's exit 2) whose
/// message is one line of printable characters starting with one of `prefixes` (the file name, so
/// that the user sees "file:line:col: key: ..."). Any other exception, or a UserError that breaks
/// the form, aborts, which libFuzzer reports as a crash with the input that caused it.
template <typename Read>
void expect_clean(std::initializer_list<std::string> prefixes, Read read) {
  try {
    read();
  } catch (const UserError& e) {
    const std::string message = e.what();
    bool named = false;
    for (const std::string& prefix : prefixes) named = named || message.rfind(prefix, 0) == 0;
    const bool printable = std::ranges::none_of(
        message, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
    if (!named || !printable) {
      std::fprintf(stderr, "UserError not on one line naming its source: %s\n", message.c_str());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "escaped exception (not UserError): %s\n", e.what());
    std::abort();
  }
}

/// A file of this process that holds the current input (readers that take a path read it).
inline const std::string& input_path() {
  static const std::string path = "/tmp/dtwin-fuzz-" + std::to_string(getpid()) + ".yaml";
  return path;
}

/// Writes `size` bytes of `data` to input_path() and returns that path.
inline const std::string& write_input(const uint8_t* data, size_t size) {
  std::ofstream(input_path(), std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return input_path();
}

}  // namespace dtwin::fuzz
