#include "runtime/calibrate/host_op_timing.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/clock.hpp"
#include "runtime/rank_device.hpp"

namespace dtwin::rt {
namespace {

double median_round(const torch::Device& device, const torch::Tensor& x, bool grad, int rounds,
                    int ops_per_round) {
  std::vector<double> per_op;
  for (int round = -1; round < rounds; ++round) {  // round -1 warms the dispatcher and device
    std::optional<torch::NoGradGuard> no_grad;
    if (!grad) no_grad.emplace();
    torch::Tensor y = x;
    synchronize(device);
    const double start = wall_seconds();
    for (int i = 0; i < ops_per_round; ++i) y = y + 1.0;
    const double seconds = wall_seconds() - start;
    synchronize(device);
    if (round >= 0) per_op.push_back(seconds / ops_per_round);
  }
  std::nth_element(per_op.begin(), per_op.begin() + rounds / 2, per_op.end());
  return per_op[rounds / 2];
}

}  // namespace

HostOpSeconds measure_host_op_seconds(const torch::Device& device, int rounds, int ops_per_round) {
  if (rounds < 1 || ops_per_round < 1 || ops_per_round > 512)
    throw std::invalid_argument(
        "measure_host_op_seconds: rounds >= 1 and 1..512 operators per "
        "round, got " +
        std::to_string(rounds) + " and " + std::to_string(ops_per_round));
  const torch::Tensor x =
      torch::ones({16}, torch::TensorOptions().device(device).dtype(torch::kFloat32))
          .requires_grad_();
  HostOpSeconds out;
  out.grad = median_round(device, x, true, rounds, ops_per_round);
  out.no_grad = median_round(device, x, false, rounds, ops_per_round);
  return out;
}

}  // namespace dtwin::rt
