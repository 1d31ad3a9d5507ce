// libFuzzer target: the schedule text parser (to_text's form). The first two bytes choose the
// layout it is parsed against (dp, pp and virtual stages 1..4, microbatches 1..16); the rest is
// the text.
#include <string>

#include "schedules/format.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  dtwin::sched::Layout layout;
  layout.dp = 1 + (data[0] & 3);
  layout.pp = 1 + ((data[0] >> 2) & 3);
  layout.virtual_stages = 1 + ((data[0] >> 4) & 3);
  layout.microbatches = 1 + (data[1] & 15);
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  dtwin::fuzz::expect_clean({"line "}, [&] { dtwin::sched::parse_text(text, "fuzz", layout); });
  return 0;
}
