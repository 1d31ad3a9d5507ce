// libFuzzer target: the readers behind dtwin compare, the Chrome trace and the step summary.
// dtwin compare prefixes their messages with the file's path; the readers' own messages must
// stand alone, so any one-line UserError is accepted.
#include <string>

#include "tests/fuzz/fuzz_input.hpp"
#include "trace/timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtwin::fuzz::expect_clean({""}, [&] { dtwin::trace::from_chrome_trace(text); });
  dtwin::fuzz::expect_clean({""}, [&] { dtwin::trace::from_summary_json(text); });
  return 0;
}
