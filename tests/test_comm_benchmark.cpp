// The profile's loopback measurement (runtime/calibrate/comm_benchmark.hpp): pairs of real Gloo
// ranks, threads of this process, ping-ponging at once.
#include <catch2/catch.hpp>

#include "runtime/calibrate/comm_benchmark.hpp"

TEST_CASE("p2p_concurrency times 1 to k pairs of ranks transferring at once, relative to one") {
  const dtwin::RuntimeSpec cpu;  // Gloo on the CPU
  const std::vector<double> curve = dtwin::rt::p2p_concurrency(4 << 20, 2, 10, cpu);
  REQUIRE(curve.size() == 2);
  CHECK(curve[0] == 1);
  // Two pairs cannot each move their messages twice as fast as one pair alone.
  CHECK(curve[1] > 0.5);
}
