// libFuzzer target: the measured-profile reader (dtwin run's cluster.device.profile).
#include "models/cost/profile.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = dtwin::fuzz::write_input(data, size);
  dtwin::fuzz::expect_clean({path + ":"}, [&] { dtwin::load_profile(path); });
  return 0;
}
