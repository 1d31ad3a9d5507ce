#include "runtime/calibrate/gemm_benchmark.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

#include "runtime/calibrate/sample_statistics.hpp"
#include "runtime/rank_device.hpp"

namespace dtwin::rt {

std::vector<GemmPoint> measure_gemms(const std::vector<Op>& gemms, torch::ScalarType dtype,
                                     const torch::Device& device, int warmup, int repeats) {
  if (repeats < 1) throw std::invalid_argument("measure_gemms: repeats must be >= 1");
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  std::vector<GemmPoint> points;
  for (const Op& op : gemms) {
    if (op.kind != OpKind::Gemm)
      throw std::invalid_argument("measure_gemms: '" + op.name + "' is not a GEMM");
    const auto m = static_cast<int64_t>(op.m), n = static_cast<int64_t>(op.n),
               k = static_cast<int64_t>(op.k);
    const torch::Tensor a = torch::randn({m, k}, options);
    const torch::Tensor b = torch::randn({k, n}, options);
    torch::Tensor c = torch::empty({m, n}, options);
    std::vector<double> seconds;
    for (int i = -warmup; i < repeats; ++i) {
      const double s = device_seconds(device, [&] { at::mm_out(c, a, b); });
      if (i >= 0) seconds.push_back(s);
    }
    points.push_back({op.name, op.m, op.n, op.k, median(seconds)});
  }
  return points;
}

}  // namespace dtwin::rt
