// Tests of runtime/gemm_benchmark: the profile's GEMMs timed on this machine.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "models/cost/layer_ops.hpp"
#include "runtime/calibrate/gemm_benchmark.hpp"

namespace {

dtwin::Op gemm(const char* name, double m, double n, double k) {
  dtwin::Op op;
  op.name = name;
  op.kind = dtwin::OpKind::Gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.flops = 2 * m * n * k;
  return op;
}

}  // namespace

TEST_CASE("measure_gemms times each GEMM once per op, larger ones longer", "[gemm]") {
  // One intra-op thread, as configure_threads gives each of two ranks on this 2-core machine.
  // With LibTorch's default two, ctest -j2's other processes deschedule one of the OpenMP pool's
  // threads and the other waits for it at the GEMM's barrier: with three busy processes beside
  // it the 32x32x16 GEMM's median was 20-40 ms (once above the 1024^3 one's), against 2 us
  // (fp32) and 31 us (bf16) on one thread.
  torch::set_num_threads(1);
  const std::vector<dtwin::Op> ops{gemm("small", 32, 32, 16), gemm("large", 1024, 1024, 1024)};
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto points = dtwin::rt::measure_gemms(ops, dtype, torch::kCPU, 1, 15);
    REQUIRE(points.size() == 2);
    CHECK(points[0].name == "small");
    CHECK((points[1].m == 1024 && points[1].n == 1024 && points[1].k == 1024));
    CHECK(points[0].seconds > 0);
    // 65536 times the FLOPs of the small one: far more than its fixed costs.
    CHECK(points[1].seconds > 2 * points[0].seconds);
  }
  dtwin::Op norm;
  norm.name = "norm";
  CHECK_THROWS_AS(dtwin::rt::measure_gemms({norm}, torch::kFloat32, torch::kCPU, 0, 1),
                  std::invalid_argument);
  CHECK_THROWS_AS(dtwin::rt::measure_gemms(ops, torch::kFloat32, torch::kCPU, 0, 0),
                  std::invalid_argument);
}
