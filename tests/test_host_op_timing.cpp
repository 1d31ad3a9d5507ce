// Tests of the host seconds per dispatched operator that `dtwin profile` measures
// (runtime/calibrate/host_op_timing.hpp), on the CPU.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>

#include "runtime/calibrate/host_op_timing.hpp"
#include "runtime/clock.hpp"

TEST_CASE("the host seconds per operator: each mode's median, of the order of one addition") {
  const dtwin::rt::HostOpSeconds host = dtwin::rt::measure_host_op_seconds(torch::kCPU, 9, 128);
  // One 16-element addition through LibTorch's dispatcher: microseconds, not nanoseconds (the
  // arithmetic alone) nor milliseconds.
  CHECK(host.grad > 1e-7);
  CHECK(host.grad < 1e-3);
  CHECK(host.no_grad > 1e-7);
  CHECK(host.no_grad < 1e-3);
  // The same additions timed here, with autograd recording, in 9 rounds of 128: the fastest
  // round's seconds per addition within a factor 3 of the median (a figure per round rather
  // than per operator would be 128 times too large). The fastest, not one round: a round
  // preempted on this shared machine is slower, never faster.
  const torch::Tensor x = torch::ones({16}).requires_grad_();
  double fastest = 1;
  for (int round = 0; round < 9; ++round) {
    torch::Tensor y = x;
    const double start = dtwin::rt::wall_seconds();
    for (int i = 0; i < 128; ++i) y = y + 1.0;
    fastest = std::min(fastest, (dtwin::rt::wall_seconds() - start) / 128);
  }
  CHECK(fastest < 3 * host.grad);
  CHECK(fastest > host.grad / 3);
  CHECK_THROWS_AS(dtwin::rt::measure_host_op_seconds(torch::kCPU, 0, 128), std::invalid_argument);
  CHECK_THROWS_AS(dtwin::rt::measure_host_op_seconds(torch::kCPU, 3, 1024), std::invalid_argument);
}
