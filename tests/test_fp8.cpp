// Tests of training.precision fp8 in the cost and memory models, closed form: the layer's linear
// GEMMs at the device's fp8_flops, the fp8 casts' bytes per recipe (models/cost/layer_ops.hpp),
// the fp8 weight copies and the quantized saved inputs (models/cost/cost_model.hpp,
// models/cost/parallel_memory.hpp).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/cost/layer_ops.hpp"
#include "models/spec/scenario_loader.hpp"

using dtwin::CostModel;
using dtwin::DeviceDescription;
using dtwin::Fp8Operand;
using dtwin::Fp8Recipe;
using dtwin::Op;
using dtwin::OpKind;
using dtwin::Pass;
using dtwin::Precision;
using dtwin::Scenario;

namespace {

/// scenarios/h100-single.yaml (llama, d 288, f 768, 6 layers, 6 heads, s 256, b 32, 4
/// microbatches, H100) with `overrides`.
Scenario h100_single(std::vector<std::string> overrides = {}) {
  return dtwin::load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/h100-single.yaml",
                              overrides);
}

/// Sum of op_seconds over the ops of `kind` in one layer's `pass`.
double seconds_of(const Scenario& sc, Pass pass, OpKind kind) {
  const DeviceDescription& device = *sc.cluster.device.description;
  double seconds = 0;
  for (const Op& op :
       dtwin::layer_ops(sc.model, sc.layout, sc.training.precision, pass, sc.training.fp8_recipe))
    if (op.kind == kind && op.name.find("fp8 cast") == std::string::npos)
      seconds += dtwin::op_seconds(device, op, sc.training.precision);
  return seconds;
}

}  // namespace

TEST_CASE("fp8 casts move 2 + 2·(1 + σ) bytes per element, + 2 for current scaling's amax") {
  CHECK(dtwin::fp8_cast_bytes_per_element(Fp8Recipe::Delayed, Fp8Operand::Activation) == 4);
  CHECK(dtwin::fp8_cast_bytes_per_element(Fp8Recipe::Tensorwise, Fp8Operand::Weight) == 6);
  CHECK(dtwin::fp8_cast_bytes_per_element(Fp8Recipe::Blockwise, Fp8Operand::Activation) ==
        4 + 8.0 / 128);
  CHECK(dtwin::fp8_cast_bytes_per_element(Fp8Recipe::Blockwise, Fp8Operand::Weight) ==
        4 + 8.0 / 16384);
  CHECK(dtwin::fp8_cast_bytes_per_element(Fp8Recipe::Mxfp8, Fp8Operand::Weight) == 4 + 2.0 / 32);
  CHECK(dtwin::fp8_copies_bytes_per_element(Fp8Recipe::Mxfp8, Fp8Operand::Activation) ==
        2 + 2.0 / 32);
  // GEMM (m, n, k) = (100, 30, 20), 4 microbatches, delayed: F casts the input (m·k) and a quarter
  // of the weight (k·n), I the output gradient (m·n).
  const dtwin::Fp8CastBytes bytes = dtwin::fp8_cast_bytes(100, 30, 20, Fp8Recipe::Delayed, 4);
  CHECK(bytes.forward == 4 * (100 * 20) + 4 * (20 * 30) / 4.0);
  CHECK(bytes.input_backward == 4 * (100 * 30));
}

TEST_CASE("fp8 runs the layer's linear GEMMs at fp8_flops and leaves the rest in bf16") {
  const Scenario bf16 = h100_single();
  const Scenario fp8 = h100_single({"training.precision=fp8"});
  const DeviceDescription& h100 = *bf16.cluster.device.description;
  REQUIRE(h100.has_fp8());
  std::vector<std::string> gemms;
  for (const Op& op : dtwin::layer_ops(fp8.model, fp8.layout, Precision::Fp8, Pass::Forward))
    if (op.kind == OpKind::Gemm) {
      CHECK(op.fp8);
      gemms.push_back(op.name);
    }
  CHECK(gemms ==
        std::vector<std::string>{"qkv", "attention_out", "mlp_gate", "mlp_up", "mlp_down"});
  for (Pass pass : {Pass::Forward, Pass::InputBackward, Pass::WeightBackward}) {
    // Compute-bound GEMMs: seconds less the kernel overhead scale by bf16_flops / fp8_flops.
    const auto work = [&](const Scenario& sc) {
      int count = 0;
      for (const Op& op : dtwin::layer_ops(sc.model, sc.layout, sc.training.precision, pass))
        count += op.kind == OpKind::Gemm;
      return seconds_of(sc, pass, OpKind::Gemm) - count * h100.kernel_overhead;
    };
    CHECK(work(fp8) == Approx(work(bf16) * h100.bf16_flops / h100.fp8_flops));
    CHECK(seconds_of(fp8, pass, OpKind::Attention) == seconds_of(bf16, pass, OpKind::Attention));
  }
  for (Pass pass : {Pass::Forward, Pass::InputBackward, Pass::WeightBackward})
    for (const auto& ops : {dtwin::head_ops(fp8.model, fp8.layout, Precision::Fp8, pass),
                            dtwin::embedding_ops(fp8.model, fp8.layout, Precision::Fp8, pass)})
      for (const Op& op : ops) CHECK_FALSE(op.fp8);
}

TEST_CASE("fp8 precedes each linear GEMM with its cast: closed form for the QKV projection") {
  const double T = 32 * 256, d = 288, microbatches = 4;
  for (const auto& [recipe, name] :
       {std::pair{Fp8Recipe::Delayed, "delayed"}, std::pair{Fp8Recipe::Blockwise, "blockwise"}}) {
    const Scenario sc =
        h100_single({"training.precision=fp8", std::string("training.fp8_recipe=") + name});
    const double act = dtwin::fp8_cast_bytes_per_element(recipe, Fp8Operand::Activation);
    const double weight = dtwin::fp8_cast_bytes_per_element(recipe, Fp8Operand::Weight);
    double forward = -1, input_backward = -1;
    for (const Op& op :
         dtwin::layer_ops(sc.model, sc.layout, Precision::Fp8, Pass::Forward, recipe))
      if (op.name == "qkv fp8 cast") forward = op.bytes;
    for (const Op& op :
         dtwin::layer_ops(sc.model, sc.layout, Precision::Fp8, Pass::InputBackward, recipe))
      if (op.name == "qkv fp8 cast backward") input_backward = op.bytes;
    CHECK(forward == Approx(T * d * act + d * 3 * d * weight / microbatches));
    CHECK(input_backward == Approx(T * 3 * d * act));
  }
  for (const Op& op :
       dtwin::layer_ops(h100_single().model, h100_single().layout, Precision::Bf16, Pass::Forward))
    CHECK(op.name.find("fp8") == std::string::npos);
}

TEST_CASE("fp8 holds two fp8 copies of the layers' linear weights and saves quantized inputs") {
  const double d = 288, f = 768, layers = 6, s = 256, b = 32;
  const double matmul = 4 * d * d + 3 * d * f;  // QKV and output (multi-head), gate, up, down
  const CostModel bf16(h100_single());
  const CostModel fp8(h100_single({"training.precision=fp8"}));
  const CostModel mx(h100_single({"training.precision=fp8", "training.fp8_recipe=mxfp8"}));
  CHECK(bf16.fp8_weight_bytes(0) == 0);
  CHECK(fp8.fp8_weight_bytes(0) == Approx(layers * matmul * 2));
  CHECK(mx.fp8_weight_bytes(0) == Approx(layers * matmul * 2 * (1 + 1.0 / 32)));
  CHECK(fp8.static_memory_bytes(0) - bf16.static_memory_bytes(0) ==
        Approx(fp8.fp8_weight_bytes(0)));
  CHECK(fp8.bytes_per_element() == 2);
  // Saved inputs of QKV, MLP up/gate (the norm outputs), the output and down projections at 1
  // byte instead of 2 (t = 1).
  const double sbh = s * b * d, sbf = s * b * f;
  CHECK(bf16.stage(0).activation_bytes - fp8.stage(0).activation_bytes ==
        Approx(layers * (3 * sbh + sbf)));
  const CostModel full(h100_single({"training.precision=fp8", "layout.recompute=full"}));
  const CostModel full_bf16(h100_single({"layout.recompute=full"}));
  CHECK(full.stage(0).activation_bytes == full_bf16.stage(0).activation_bytes);
}

TEST_CASE("fp8 parameter gathers move the layers' linear weights at 1 + σ bytes, the rest at 2") {
  const double d = 288, f = 768, layers = 6;
  const double matmul = layers * (4 * d * d + 3 * d * f);
  // dp 2 over two GPUs of one node, ZeRO 1 (the distributed optimizer's parameter all-gather)
  const std::vector<std::string> sharded = {"training.precision=fp8", "layout.dp=2",
                                            "layout.zero=1", "cluster.devices_per_node=2"};
  std::vector<std::string> gathered = sharded;
  gathered.push_back("training.fp8_param_gather=true");
  const CostModel plain(h100_single(sharded)), fp8(h100_single(gathered));
  const double params = plain.stage(0).params;
  CHECK(plain.weight_bytes(0) == Approx(2 * params));
  CHECK(fp8.weight_bytes(0) == Approx(matmul * 1 + (params - matmul) * 2));
  gathered.push_back("training.fp8_recipe=mxfp8");
  CHECK(CostModel(h100_single(gathered)).weight_bytes(0) ==
        Approx(matmul * (1 + 1.0 / 32) + (params - matmul) * 2));
}

TEST_CASE("fp8 leaves bf16 and fp32 scenarios as they were") {
  const CostModel bf16(h100_single());
  const CostModel explicit_recipe(h100_single({"training.fp8_recipe=delayed"}));
  CHECK(bf16.stage(0).activation_bytes == explicit_recipe.stage(0).activation_bytes);
  CHECK(bf16.stage(0).kernel->forward == explicit_recipe.stage(0).kernel->forward);
  CHECK(bf16.static_memory_bytes(0) == explicit_recipe.static_memory_bytes(0));
}
