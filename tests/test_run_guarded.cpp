// The CLI's exit-code policy (cli/commands.hpp run_guarded): bad input exits 2, a broken
// invariant of dtwin exits 1 and reads as an internal error.
#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "base/user_error.hpp"
#include "cli/commands.hpp"
#include "models/spec/scenario_loader.hpp"

namespace {

struct Outcome {
  int code;
  std::string stderr_text;
};

/// Runs `body` under run_guarded and captures what it prints to std::cerr.
template <typename Body>
Outcome guarded(Body body) {
  std::ostringstream captured;
  std::streambuf* const saved = std::cerr.rdbuf(captured.rdbuf());
  const int code = dtwin::run_guarded(body);
  std::cerr.rdbuf(saved);
  return {code, captured.str()};
}

}  // namespace

TEST_CASE("run_guarded: a user error exits 2 with its message", "[cli]") {
  const Outcome user = guarded([]() -> int {
    throw dtwin::UserError("a.yaml:3:7: layout.pp: expected a positive integer, got '0'");
  });
  CHECK(user.code == 2);
  CHECK(user.stderr_text == "error: a.yaml:3:7: layout.pp: expected a positive integer, got '0'\n");
  const Outcome config = guarded([]() -> int { throw dtwin::ConfigError("b.yaml: bad"); });
  CHECK(config.code == 2);
  CHECK(config.stderr_text == "error: b.yaml: bad\n");
}

TEST_CASE("run_guarded: an internal error exits 1 and reads as a bug", "[cli]") {
  for (const auto& thrower : {+[]() -> int { throw std::logic_error("broken invariant"); },
                              +[]() -> int { throw std::invalid_argument("broken invariant"); },
                              +[]() -> int { throw std::out_of_range("broken invariant"); }}) {
    const Outcome internal = guarded(thrower);
    CHECK(internal.code == 1);
    CHECK(internal.stderr_text == "internal error: broken invariant\n");
  }
  const Outcome failure = guarded([]() -> int { throw std::runtime_error("disk full"); });
  CHECK(failure.code == 1);
  CHECK(failure.stderr_text == "error: disk full\n");
  CHECK(guarded([] { return 0; }).code == 0);
}
