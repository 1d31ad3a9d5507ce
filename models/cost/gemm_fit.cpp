#include "models/cost/gemm_fit.hpp"

#include <stdexcept>

#include "models/cost/kernel_model.hpp"

namespace dtwin {

std::vector<Op> model_gemms(const ModelSpec& model, const LayoutSpec& layout, Precision precision) {
  std::vector<Op> gemms;
  for (const Pass pass : {Pass::Forward, Pass::InputBackward, Pass::WeightBackward}) {
    for (const auto& ops :
         {layer_ops(model, layout, precision, pass), head_ops(model, layout, precision, pass)}) {
      for (const Op& op : ops)
        if (op.kind == OpKind::Gemm) gemms.push_back(op);
    }
  }
  return gemms;
}

double achieved_gemm_flops(const std::vector<GemmPoint>& points) {
  double flops = 0, seconds = 0;
  for (const GemmPoint& g : points) {
    flops += 2 * g.m * g.n * g.k;
    seconds += g.seconds;
  }
  return seconds > 0 ? flops / seconds : 0;
}

double fitted_gemm_efficiency(const DeviceDescription& device, const std::vector<GemmPoint>& points,
                              Precision precision) {
  double measured = 0;
  for (const GemmPoint& g : points) measured += g.seconds;
  if (points.empty() || !(measured > 0))
    throw std::invalid_argument("fitted_gemm_efficiency: no measured GEMM seconds");
  // How much more the model predicts than was measured at `efficiency` (falls as it grows).
  const auto excess = [&](double efficiency) {
    DeviceDescription d = device;
    d.gemm_efficiency = efficiency;
    double predicted = 0;
    for (const GemmPoint& g : points) predicted += gemm_seconds(d, g.m, g.n, g.k, precision);
    return predicted - measured;
  };
  if (excess(1) >= 0) return 1;
  double low = 0.5;  // halved until the model predicts at least what was measured
  while (excess(low) < 0) low /= 2;
  double high = 2 * low;
  for (int i = 0; i < 100; ++i) {
    const double mid = (low + high) / 2;
    (excess(mid) < 0 ? high : low) = mid;
  }
  return (low + high) / 2;
}

}  // namespace dtwin
