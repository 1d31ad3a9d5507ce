#include "runtime/fault_injection.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "base/user_error.hpp"

namespace dtwin::rt {
namespace {

struct Fault {
  std::string point;
  int64_t step = 0;
};

std::optional<Fault> armed;  // set once, before the first step, on the main thread

}  // namespace

void arm_fault_injection(int rank) {
  const char* spec = std::getenv("DTWIN_FAULT");
  if (!spec || !*spec) return;
  const std::string text = spec;
  const size_t first = text.find(':'), second = text.rfind(':');
  try {
    if (first == std::string::npos || second == first) throw std::invalid_argument(text);
    size_t used_rank = 0, used_step = 0;
    const int fault_rank = std::stoi(text.substr(0, first), &used_rank);
    const int64_t step = std::stoll(text.substr(second + 1), &used_step);
    if (used_rank != first || used_step != text.size() - second - 1 || second == first + 1)
      throw std::invalid_argument(text);
    if (fault_rank == rank) armed = Fault{text.substr(first + 1, second - first - 1), step};
  } catch (const std::logic_error&) {
    throw UserError("DTWIN_FAULT: expected RANK:POINT:STEP (e.g. 1:ALLREDUCE:3), got '" + text +
                    "'");
  }
}

void inject_fault(std::string_view point, int64_t step) {
  if (armed && armed->point == point && armed->step == step) ::kill(::getpid(), SIGKILL);
}

}  // namespace dtwin::rt
