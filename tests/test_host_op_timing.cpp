// Tests of the host seconds per dispatched operator that `dtwin profile` measures
// (runtime/calibrate/host_op_timing.hpp), on the CPU.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <stdexcept>

#include "runtime/calibrate/host_op_timing.hpp"
#include "runtime/clock.hpp"

TEST_CASE("the host seconds per operator: each mode's median, of the order of one addition") {
  const dtwin::rt::HostOpSeconds host = dtwin::rt::measure_host_op_seconds(torch::kCPU, 5, 128);
  // One 16-element addition through LibTorch's dispatcher: microseconds, not nanoseconds (the
  // arithmetic alone) nor milliseconds.
  CHECK(host.grad > 1e-7);
  CHECK(host.grad < 1e-3);
  CHECK(host.no_grad > 1e-7);
  CHECK(host.no_grad < 1e-3);
  // The same additions timed here, with autograd recording: within a factor 3 of the median.
  const torch::Tensor x = torch::ones({16}).requires_grad_();
  torch::Tensor y = x;
  const double start = dtwin::rt::wall_seconds();
  for (int i = 0; i < 128; ++i) y = y + 1.0;
  const double per_op = (dtwin::rt::wall_seconds() - start) / 128;
  CHECK(per_op < 3 * host.grad);
  CHECK(per_op > host.grad / 3);
  CHECK_THROWS_AS(dtwin::rt::measure_host_op_seconds(torch::kCPU, 0, 128), std::invalid_argument);
  CHECK_THROWS_AS(dtwin::rt::measure_host_op_seconds(torch::kCPU, 3, 1024), std::invalid_argument);
}
