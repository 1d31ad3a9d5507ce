// Tests of models/gemm_fit: the model's GEMM shapes, the efficiency fitted to measured seconds,
// and the fitted device description written and read back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "models/cost/gemm_fit.hpp"
#include "models/cost/kernel_model.hpp"
#include "models/spec/device_description.hpp"
#include "models/spec/scenario_loader.hpp"

using dtwin::DeviceDescription;
using dtwin::GemmPoint;
using dtwin::Op;
using dtwin::Precision;

namespace {

dtwin::Scenario scenario(const std::string& name) {
  return dtwin::load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/" + name + ".yaml");
}

std::vector<Op> gemms_of(const dtwin::Scenario& sc) {
  return dtwin::model_gemms(sc.model, sc.layout, sc.training.precision);
}

/// The points the kernel model predicts for `gemms` on `device` at `precision`.
std::vector<GemmPoint> predicted(const DeviceDescription& device, const std::vector<Op>& gemms,
                                 Precision precision) {
  std::vector<GemmPoint> points;
  for (const Op& op : gemms)
    points.push_back(
        {op.name, op.m, op.n, op.k, dtwin::gemm_seconds(device, op.m, op.n, op.k, precision)});
  return points;
}

}  // namespace

TEST_CASE("a model's GEMMs: each layer projection and the LM head, in F, I and W", "[gemm]") {
  const dtwin::Scenario sc = scenario("h100-124m");
  const std::vector<Op> gemms = gemms_of(sc);
  REQUIRE(gemms.size() == 18);
  const double tokens = sc.layout.micro_batch_size * sc.model.seq_len;
  const double d = sc.model.d_model;
  // Forward first: qkv (T, 3d, d) ... the LM head (T, V, d); then its dgrad and wgrad shapes.
  CHECK(gemms[0].name == "qkv");
  CHECK((gemms[0].m == tokens && gemms[0].n == 3 * d && gemms[0].k == d));
  CHECK(gemms[5].name == "lm_head");
  CHECK((gemms[5].n == sc.model.vocab_size && gemms[5].k == d));
  CHECK(gemms[11].name == "lm_head dgrad");
  CHECK((gemms[11].m == tokens && gemms[11].n == d && gemms[11].k == sc.model.vocab_size));
  CHECK(gemms[17].name == "lm_head wgrad");
  CHECK((gemms[17].m == d && gemms[17].n == sc.model.vocab_size && gemms[17].k == tokens));
  for (const Op& op : gemms) CHECK(op.kind == dtwin::OpKind::Gemm);

  dtwin::Scenario tp2 = sc;
  tp2.layout.tp = 2;
  CHECK(gemms_of(tp2)[0].n == 3 * d / 2);  // column-parallel QKV
}

TEST_CASE("the fitted gemm_efficiency reproduces the seconds it was fitted to", "[gemm]") {
  const dtwin::Scenario sc = scenario("h100-124m");
  DeviceDescription device = *sc.cluster.device.description;
  const std::vector<Op> gemms = gemms_of(sc);
  for (const double efficiency : {0.9, 0.37, 0.004}) {
    CAPTURE(efficiency);
    device.gemm_efficiency = efficiency;
    const auto points = predicted(device, gemms, Precision::Bf16);
    DeviceDescription start = device;
    start.gemm_efficiency = 0.67;
    CHECK(dtwin::fitted_gemm_efficiency(start, points, Precision::Bf16) ==
          Approx(efficiency).epsilon(1e-9));
  }
  // Faster than the model allows even at the peak: the fit stops at 1.
  device.gemm_efficiency = 1;
  std::vector<GemmPoint> faster = predicted(device, gemms, Precision::Bf16);
  for (GemmPoint& g : faster) g.seconds /= 2;
  CHECK(dtwin::fitted_gemm_efficiency(device, faster, Precision::Bf16) == 1);
  CHECK_THROWS_AS(dtwin::fitted_gemm_efficiency(device, {}, Precision::Bf16),
                  std::invalid_argument);
}

TEST_CASE("GEMMs together reach their FLOPs over their seconds", "[gemm]") {
  const std::vector<GemmPoint> points{{"a", 10, 20, 30, 1e-3}, {"b", 100, 1, 2, 3e-3}};
  CHECK(dtwin::achieved_gemm_flops(points) == Approx((2 * 6000 + 2 * 200) / 4e-3));
  CHECK(dtwin::achieved_gemm_flops({}) == 0);
}

TEST_CASE("a device description written with a fitted efficiency reads back equal", "[device]") {
  // The H100 has an fp8 peak, the A100 none: the written file leaves fp8_flops out.
  DeviceDescription device =
      dtwin::load_device_description(GENERATE("h100-sxm", "a100-80gb-sxm"), "");
  device.gemm_efficiency = 1.0 / 7;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("dtwin_test_fitted." + std::to_string(::getpid()) + ".device.yaml"))
                               .string();
  dtwin::save_device_description(device, path, "fitted\non two lines");
  DeviceDescription back = dtwin::load_device_description(path, "");
  std::filesystem::remove(path);
  CHECK(back.source == path);
  back.source = device.source;
  CHECK(back == device);
}
