// Closed-form checks of ZeRO's model-state memory and traffic and of Korthikanti et al. 2022's
// per-layer activation memory.
#include <catch2/catch.hpp>

#include "models/cost/parallel_memory.hpp"

using dtwin::Attention;
using dtwin::LayerActivationShape;
using dtwin::Recompute;

namespace {
constexpr double GB = 1e9;
}

TEST_CASE("ZeRO model states per GPU match the paper's 7.5B example on 64 GPUs") {
  // Rajbhandari et al. 2020, Figure 1: Ψ = 7.5B, N_d = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB,
  // 1.88 GB.
  const double psi = 7.5e9;
  CHECK(dtwin::model_state_bytes(psi, 0, 64) / GB == Approx(120).epsilon(0.005));
  CHECK(dtwin::model_state_bytes(psi, 1, 64) / GB == Approx(31.4).epsilon(0.005));
  CHECK(dtwin::model_state_bytes(psi, 2, 64) / GB == Approx(16.6).epsilon(0.005));
  CHECK(dtwin::model_state_bytes(psi, 3, 64) / GB == Approx(1.875).epsilon(0.005));
  // 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N for another N.
  CHECK(dtwin::model_state_bytes(1e9, 1, 8) == Approx(4e9 + 12e9 / 8).epsilon(0.005));
  CHECK(dtwin::model_state_bytes(1e9, 2, 8) == Approx(2e9 + 14e9 / 8).epsilon(0.005));
  CHECK(dtwin::model_state_bytes(1e9, 3, 8) == Approx(16e9 / 8).epsilon(0.005));
  // Offloading the optimizer leaves the 16-bit weights and gradients.
  CHECK(dtwin::model_state_bytes(1e9, 2, 8, dtwin::Offload::Optimizer) ==
        Approx(2e9 + 2e9 / 8).epsilon(0.005));
  CHECK_THROWS_AS(dtwin::model_state_bytes(1e9, 4, 8), std::invalid_argument);
}

TEST_CASE("model states match Megatron-LM's bytes per parameter for each weight/gradient type") {
  // Megatron Core developer guide, "Distributed Optimizer": bf16 parameters with fp32 gradients
  // take 18 bytes, 6 + 12/d with the distributed optimizer; fp32 parameters and gradients 16 and
  // 8 + 8/d.
  using dtwin::Offload;
  CHECK(dtwin::model_state_bytes(1e9, 0, 8, Offload::None, 2, 4) == Approx(18e9));
  CHECK(dtwin::model_state_bytes(1e9, 1, 8, Offload::None, 2, 4) == Approx(6e9 + 12e9 / 8));
  CHECK(dtwin::model_state_bytes(1e9, 0, 8, Offload::None, 4, 4) == Approx(16e9));
  CHECK(dtwin::model_state_bytes(1e9, 1, 8, Offload::None, 4, 4) == Approx(8e9 + 8e9 / 8));
  // ZeRO-2 also shards the fp32 gradients; ZeRO-3 everything.
  CHECK(dtwin::model_state_bytes(1e9, 2, 8, Offload::None, 2, 4) == Approx(2e9 + 16e9 / 8));
  CHECK(dtwin::model_state_bytes(1e9, 3, 8, Offload::None, 2, 4) == Approx(18e9 / 8));
  // Gradients narrower than the weights are not a training setup.
  CHECK_THROWS_AS(dtwin::model_state_bytes(1e9, 0, 8, Offload::None, 4, 2), std::invalid_argument);
}

TEST_CASE("ZeRO's data-parallel traffic: 2Ψ for stages 0 to 2, 3Ψ for stage 3") {
  CHECK(dtwin::dp_traffic_elements(1e9, 0) == Approx(2e9));
  CHECK(dtwin::dp_traffic_elements(1e9, 1) == Approx(2e9));
  CHECK(dtwin::dp_traffic_elements(1e9, 2) == Approx(2e9));
  CHECK(dtwin::dp_traffic_elements(1e9, 3) == Approx(3e9));
}

TEST_CASE("activation bytes per layer follow Korthikanti et al. 2022 Table 2") {
  // GPT-3 175B's layer (Korthikanti Table 3): s 2048, b 1, h 12288, a 96, t 8, 16-bit.
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
  const auto bytes = [&](int tp, bool sp, Recompute r, Attention at = Attention::Eager) {
    return dtwin::layer_activation_bytes(LayerActivationShape{s, b, h, a, 4 * h, tp, sp}, r, at, 2);
  };
  CHECK(bytes(1, false, Recompute::None) == Approx(sbh * (34 + 5 * a * s / h)).epsilon(0.005));
  CHECK(bytes(8, false, Recompute::None) ==
        Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))).epsilon(0.005));
  CHECK(bytes(8, true, Recompute::None) == Approx(sbh / t * (34 + 5 * a * s / h)).epsilon(0.005));
  CHECK(bytes(8, false, Recompute::Selective) == Approx(sbh * (10 + 24 / t)).epsilon(0.005));
  CHECK(bytes(8, true, Recompute::Selective) == Approx(34 * sbh / t).epsilon(0.005));
  CHECK(bytes(8, false, Recompute::Full) == Approx(2 * sbh).epsilon(0.005));
  // Flash attention drops exactly the 5as/h term; recomputation never adds memory.
  CHECK(bytes(8, true, Recompute::None, Attention::Flash) ==
        Approx(bytes(8, true, Recompute::Selective)));
  CHECK(bytes(8, true, Recompute::Full) < bytes(8, true, Recompute::Selective));
  // fp32 elements double the figure.
  CHECK(dtwin::layer_activation_bytes(LayerActivationShape{s, b, h, a, 4 * h, 8, true},
                                      Recompute::Selective, Attention::Eager,
                                      4) == Approx(2 * bytes(8, true, Recompute::Selective)));
}

TEST_CASE("ring reduce-scatter / all-gather time is (n-1)(α + S/(nβ))") {
  CHECK(dtwin::ring_half_seconds(1e9, 8, 1e11, 1e-5) == Approx(7 * (1e-5 + 1e9 / 8e11)));
  CHECK(dtwin::ring_half_seconds(1e9, 1, 1e11, 1e-5) == 0);
}
