// Tests of the mixture-of-experts closed forms (models/cost/moe_layer.hpp) and of model.moe's
// validation: every figure is arithmetic done by hand here from published shapes (Mixtral 8x7B:
// Jiang et al. 2024 and Mistral AI's announcement, 46.7B parameters, 12.9B used per token), not
// a call to the model's own formulas.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "base/user_error.hpp"
#include "models/cost/cost_model.hpp"
#include "models/cost/layer_ops.hpp"
#include "models/cost/moe_layer.hpp"
#include "models/spec/scenario_loader.hpp"

using dtwin::Scenario;

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";

/// Mixtral 8x7B (vocab 32000, d 4096, 32 layers, 32 heads, 8 key/value heads, 8 experts of
/// width 14336, top 2, seq 4096) on dp·tp ranks of one device, bf16, with `extra` on top.
Scenario mixtral(int dp, int tp, int ep, std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {
      "model.vocab_size=32000",
      "model.d_model=4096",
      "model.n_layers=32",
      "model.n_heads=32",
      "model.n_kv_heads=8",
      "model.ffn_hidden=14336",
      "model.seq_len=4096",
      "model.moe.num_experts=8",
      "model.moe.top_k=2",
      "model.moe.expert_ffn_hidden=14336",
      "training.precision=bf16",
      "layout.pp=1",
      "layout.dp=" + std::to_string(dp),
      "layout.tp=" + std::to_string(tp),
      "layout.sequence_parallel=" + std::string(tp > 1 ? "true" : "false"),
      "layout.ep=" + std::to_string(ep),
      "cluster.ranks_per_device=" + std::to_string(dp * tp)};
  o.insert(o.end(), extra.begin(), extra.end());
  return dtwin::load_scenario(kQuickstart, o);
}

}  // namespace

TEST_CASE("Mixtral 8x7B: 46.7B parameters, 12.9B used per token", "[cost][moe]") {
  const Scenario sc = mixtral(8, 1, 8);
  // experts 8·3·4096·14336 = 1,409,286,144; router 4096·8 = 32,768
  CHECK(dtwin::expert_params(sc.model.moe, 4096) == 1409286144.0);
  CHECK(dtwin::moe_ffn_params(sc.model) == 1409286144.0 + 32768.0);
  // per token: 2 experts 352,321,536 + the router
  CHECK(dtwin::moe_active_ffn_params(sc.model) == 352321536.0 + 32768.0);
  CHECK(dtwin::moe_layers(sc.model) == 32);
  // attention 2·4096² + 2·4096·1024 = 41,943,040 and two RMSNorms 8,192 per layer; embedding and
  // head 32000·4096 = 131,072,000 each; final norm 4,096
  const double rest = 32 * (41943040.0 + 8192.0) + 2 * 131072000.0 + 4096.0;
  const double total = rest + 32 * dtwin::moe_ffn_params(sc.model);
  const double active = rest + 32 * dtwin::moe_active_ffn_params(sc.model);
  CHECK(total == 46702792704.0);
  CHECK(active == 12879925248.0);
  CHECK(total == Approx(46.7e9).epsilon(0.001));   // Mistral AI: 46.7B
  CHECK(active == Approx(12.9e9).epsilon(0.002));  // Mistral AI: 12.9B per token
}

TEST_CASE("first_dense_layers and a shared expert change the MoE layer count and weights",
          "[cost][moe]") {
  const Scenario sc = mixtral(
      8, 1, 8, {"model.moe.first_dense_layers=3", "model.moe.shared_expert_ffn_hidden=2048"});
  CHECK(dtwin::moe_layers(sc.model) == 29);
  // shared expert 3·4096·2048 = 25,165,824
  CHECK(dtwin::moe_ffn_params(sc.model) == 1409286144.0 + 32768.0 + 25165824.0);
  CHECK(dtwin::moe_active_ffn_params(sc.model) == 352321536.0 + 32768.0 + 25165824.0);
}

TEST_CASE("Expert weights are sharded over ep · etp GPUs", "[cost][moe]") {
  // 1,409,286,144 expert weights per layer
  CHECK(dtwin::expert_params_per_gpu(mixtral(8, 1, 8).model, mixtral(8, 1, 8).layout) ==
        176160768.0);
  const Scenario folded = mixtral(4, 2, 4);  // etp absent: tp = 2 (Megatron's default)
  CHECK(folded.layout.expert_tp() == 2);
  CHECK(folded.layout.expert_dp() == 1);
  CHECK(dtwin::expert_params_per_gpu(folded.model, folded.layout) == 176160768.0);
  const Scenario etp1 = mixtral(4, 2, 4, {"layout.etp=1"});
  CHECK(etp1.layout.expert_dp() == 2);
  CHECK(dtwin::expert_params_per_gpu(etp1.model, etp1.layout) == 352321536.0);
}

TEST_CASE("All-to-all bytes per MoE layer: dispatch or combine, imbalance and capacity",
          "[cost][moe]") {
  const double T = 4096;  // one sequence of 4096 tokens per microbatch
  // tp 2 with sequence parallelism: 2048 tokens per GPU, 2 copies each, 4096 bf16 elements,
  // 7 of 8 expert-parallel ranks remote: 2048·2·4096·2·7/8 = 29,360,128 bytes
  const Scenario sc = mixtral(8, 2, 8);
  CHECK(dtwin::moe_all_to_all_bytes(sc.model, sc.layout, T, 2) == 29360128.0);
  CHECK(dtwin::moe_all_to_all_bytes(mixtral(8, 2, 8, {"model.moe.load_imbalance=1.5"}).model,
                                    sc.layout, T, 2) == 1.5 * 29360128.0);
  // a capacity factor caps the busiest rank at capacity_factor times the mean
  const Scenario capped =
      mixtral(8, 2, 8, {"model.moe.load_imbalance=1.5", "model.moe.capacity_factor=1.25"});
  CHECK(dtwin::moe_all_to_all_bytes(capped.model, sc.layout, T, 2) == 1.25 * 29360128.0);
  const Scenario loose =
      mixtral(8, 2, 8, {"model.moe.load_imbalance=1.5", "model.moe.capacity_factor=2"});
  CHECK(dtwin::moe_all_to_all_bytes(loose.model, sc.layout, T, 2) == 1.5 * 29360128.0);
  // no expert parallelism: every copy stays on its GPU
  const Scenario local = mixtral(8, 2, 1);
  CHECK(dtwin::moe_all_to_all_bytes(local.model, local.layout, T, 2) == 0);
}

TEST_CASE(
    "Padded to capacity, the all-to-all volume is each expert's capacity, whatever the "
    "imbalance",
    "[cost][moe]") {
  // capacity ceil(1.3·2048·2/8) = 666 rows per expert, 8·666 = 5328 rows (not 1.3·4096 = 5324.8)
  const Scenario padded = mixtral(8, 2, 8,
                                  {"model.moe.load_imbalance=1.5", "model.moe.capacity_factor=1.3",
                                   "model.moe.pad_to_capacity=true"});
  CHECK(dtwin::moe_routed_copies(padded.model, padded.layout, 4096) == 5328);
  CHECK(dtwin::moe_all_to_all_bytes(padded.model, padded.layout, 4096, 2) ==
        5328.0 * 4096 * 2 * 7 / 8);
}

TEST_CASE("Expert gradients leave the data-parallel ring for the expert data-parallel group",
          "[cost][moe]") {
  // One stage of 32 MoE layers; per GPU (tp 1) 8/ep experts of 3·4096·14336 weights, fp32
  // gradients.
  const double expert_weights = 8.0 * 3 * 4096 * 14336;
  for (const auto& [dp, ep, ratio] :
       {std::tuple{2, 2, 0.0}, {4, 2, (0.5) / (0.75)}, {4, 4, 0.0}, {8, 2, (0.75) / (7.0 / 8)}}) {
    CAPTURE(dp, ep);
    const dtwin::CostModel cost(mixtral(dp, 1, ep));
    const double experts = 32 * expert_weights / ep * 4;
    CHECK(cost.expert_gradient_bytes(0) == Approx(experts));
    CHECK(cost.data_parallel_gradient_bytes(0) ==
          Approx(cost.gradient_bytes(0) - experts + ratio * experts));
  }
  // Without expert parallelism every gradient is reduced over the data-parallel group.
  const dtwin::CostModel dense_dp(mixtral(4, 1, 1));
  CHECK(dense_dp.expert_gradient_bytes(0) == 0);
  CHECK(dense_dp.data_parallel_gradient_bytes(0) == dense_dp.gradient_bytes(0));
}

TEST_CASE("Expert tensor parallelism gathers and reduce-scatters the routed copies over etp",
          "[cost][moe]") {
  const double T = 4096;
  // tp 2, etp 2: each GPU's 2048 tokens, top 2, gathered from 2 GPUs: 8192 copies of d 4096, bf16
  const Scenario etp2 = mixtral(8, 2, 8, {"layout.etp=2"});
  CHECK(dtwin::moe_expert_tp_bytes(etp2.model, etp2.layout, T, 2) == 2048.0 * 2 * 2 * 4096 * 2);
  const Scenario etp1 = mixtral(8, 2, 8, {"layout.etp=1"});
  CHECK(dtwin::moe_expert_tp_bytes(etp1.model, etp1.layout, T, 2) == 0);
  // the same stage with and without those collectives: only etp 2 pays them (its all-to-all
  // crosses as many nodes: one device here)
  CHECK(dtwin::CostModel(etp2).stage(0).tp_forward_s >
        dtwin::CostModel(etp1).stage(0).tp_forward_s);
}

TEST_CASE("All-to-all seconds: intra-node group, or the node link shared by its GPUs",
          "[cost][moe]") {
  Scenario sc = mixtral(8, 1, 8);
  sc.cluster.devices_per_node = 8;
  sc.cluster.ranks_per_device = 1;
  sc.cluster.intra_node = {400e9, 2e-6};
  sc.cluster.inter_node = {400e9, 5e-6};  // the node's link, shared by its 8 GPUs
  const double bytes = 7e6;
  // 8 ranks in one node: α_intra + bytes / β_intra
  CHECK(dtwin::moe_all_to_all_seconds(sc, bytes) == Approx(2e-6 + 7e6 / 400e9));
  // 4 GPUs per node: 3 of the 7 peers near, 4 far over a link shared by 4 GPUs
  sc.cluster.devices_per_node = 4;
  const double near = 7e6 * 3 / 7 / 400e9, far = 7e6 * 4 / 7 * 4 / 400e9;
  CHECK(far > near);
  CHECK(dtwin::moe_all_to_all_seconds(sc, bytes) == Approx(5e-6 + far));
  sc.layout.ep = 1;
  CHECK(dtwin::moe_all_to_all_seconds(sc, bytes) == 0);
}

TEST_CASE("MoE FLOPs per GPU and tokens per expert of the grouped GEMM", "[cost][moe]") {
  // tp 2 (sequence parallel), ep 4, etp 2: 2048 tokens per GPU, 2 copies each, and the etp peer's
  // too: 2048·2·2 = 8192 copies over the 2 local experts
  const Scenario sc = mixtral(4, 2, 4, {"model.moe.shared_expert_ffn_hidden=2048"});
  CHECK(dtwin::moe_expert_tokens(sc.model, sc.layout, 4096) == 8192.0);
  // router 2·2048·4096·8 = 134,217,728; experts 8192 copies · 2·3·4096·14336/2 = 1,443,109,011,456;
  // shared 6·2048·4096·2048 = 103,079,215,104
  const double flops = 134217728.0 + 1443109011456.0 + 103079215104.0;
  CHECK(dtwin::moe_ffn_forward_flops(sc.model, sc.layout, 4096) == flops);
  // the 2 tensor-parallel GPUs together: 2 FLOPs per active weight per token
  CHECK(2 * flops == 2 * 4096 * dtwin::moe_active_ffn_params(sc.model));
  const Scenario busy = mixtral(4, 2, 4, {"model.moe.load_imbalance=1.5"});
  CHECK(dtwin::moe_expert_tokens(busy.model, busy.layout, 4096) == 1.5 * 8192.0);
}

TEST_CASE("Expert model states are sharded over the expert data-parallel group", "[cost][moe]") {
  // dp 8, ep 4, etp 1: edp 2; 1,409,286,144 / 4 = 352,321,536 expert weights per GPU
  const Scenario sc = mixtral(8, 1, 4);
  CHECK(sc.layout.expert_dp() == 2);
  // bf16 weights, fp32 gradients: 18 bytes each without ZeRO
  CHECK(dtwin::expert_state_bytes_per_gpu(sc.model, sc.layout, 2, 4) == 18 * 352321536.0);
  // ZeRO 1 (Megatron's distributed optimizer): 6 + 12/edp bytes each
  const Scenario zero1 = mixtral(8, 1, 4, {"layout.zero=1"});
  CHECK(dtwin::expert_state_bytes_per_gpu(zero1.model, zero1.layout, 2, 4) ==
        (6 + 12.0 / 2) * 352321536.0);
}

TEST_CASE("model.moe validation: top_k, ep and the folded expert layout", "[spec][moe]") {
  const auto message = [](std::vector<std::string> extra) {
    try {
      mixtral(4, 2, 2, std::move(extra));
    } catch (const dtwin::UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message({}).empty());
  CHECK_THAT(message({"model.moe.top_k=9"}),
             Catch::Contains("model.moe.top_k (9) to be at most model.moe.num_experts (8)"));
  CHECK_THAT(message({"layout.ep=3", "layout.etp=1"}),
             Catch::Contains("layout.ep (3) to divide model.moe.num_experts (8)"));
  CHECK_THAT(message({"layout.ep=8"}), Catch::Contains("layout.ep · layout.etp (8 · 2)"));
  CHECK(message({"layout.ep=8", "layout.etp=1"}).empty());
  CHECK_THAT(message({"layout.sequence_parallel=false"}),
             Catch::Contains("layout.sequence_parallel"));
  CHECK_THAT(message({"model.family=gpt2"}), Catch::Contains("llama with model.moe"));
  CHECK_THAT(message({"model.moe.load_imbalance=1.5", "model.moe.peak_load_imbalance=1.2"}),
             Catch::Contains("at least model.moe.load_imbalance (1.5)"));
  CHECK_THAT(message({"model.moe.peak_load_imbalance=2.5"}),
             Catch::Contains("at most layout.ep (2)"));
  CHECK(message({"model.moe.load_imbalance=1.2", "model.moe.peak_load_imbalance=2"}).empty());
}

TEST_CASE("The mean imbalance sets an MoE layer's FLOPs, the worst microbatch's its activations",
          "[cost][moe]") {
  const dtwin::CostModel mean(mixtral(4, 2, 4, {"model.moe.load_imbalance=1.2"}));
  const dtwin::CostModel peak(
      mixtral(4, 2, 4, {"model.moe.load_imbalance=1.2", "model.moe.peak_load_imbalance=1.5"}));
  const dtwin::CostModel busy(mixtral(4, 2, 4, {"model.moe.load_imbalance=1.5"}));
  CHECK(peak.stage(0).forward_flops == mean.stage(0).forward_flops);
  CHECK(peak.stage(0).activation_bytes == busy.stage(0).activation_bytes);
  // 32 MoE layers, each 4·ΔTe·(f/etp)·e more: ΔTe = 0.3 · 8192 copies, f/etp = 14336/2, bf16.
  CHECK(peak.stage(0).activation_bytes - mean.stage(0).activation_bytes ==
        Approx(32 * 4 * 0.3 * 8192 * 7168 * 2.0).epsilon(1e-9));
}

TEST_CASE("A MoE layer's operators: router, permute, experts, un-permute, shared expert",
          "[cost][moe]") {
  using dtwin::Pass;
  const Scenario sc = mixtral(4, 2, 4, {"model.moe.shared_expert_ffn_hidden=2048"});
  const auto gemm_flops = [&](const std::vector<dtwin::Op>& ops) {
    double flops = 0;
    for (const dtwin::Op& op : ops)
      if (op.kind == dtwin::OpKind::Gemm) flops += op.flops;
    return flops;
  };
  const auto precision = sc.training.precision;
  const auto moe = dtwin::moe_layer_ops(sc.model, sc.layout, precision, Pass::Forward);
  const auto dense = dtwin::layer_ops(sc.model, sc.layout, precision, Pass::Forward);
  // the dense MLP per GPU: 2·4096 tokens·3·4096·14336/2
  const double dense_mlp = 2 * 4096.0 * 3 * 4096 * 14336 / 2;
  CHECK(gemm_flops(moe) == Approx(gemm_flops(dense) - dense_mlp +
                                  dtwin::moe_ffn_forward_flops(sc.model, sc.layout, 4096)));
  for (const Pass pass : {Pass::InputBackward, Pass::WeightBackward})
    CHECK(gemm_flops(dtwin::moe_layer_ops(sc.model, sc.layout, precision, pass)) ==
          Approx(gemm_flops(moe)));
  std::vector<std::string> names;
  for (const dtwin::Op& op : moe) names.push_back(op.name);
  const std::vector<std::string> ffn = {
      "mlp_norm",      "moe_router",  "moe_permute",   "expert_gate", "expert_up",
      "expert_swiglu", "expert_down", "moe_unpermute", "shared_gate", "shared_up",
      "shared_swiglu", "shared_down", "mlp_residual"};
  CHECK(std::vector<std::string>(names.end() - ffn.size(), names.end()) == ffn);
  // the experts' grouped GEMM: the GPU's 8192 expert token copies over its 8/4 = 2 local
  // experts, 4096 each, 14336/2 columns each of gate and up
  const dtwin::Op& gate = moe[names.size() - ffn.size() + 3];
  CHECK(gate.batch == 2.0);
  CHECK(gate.m == 4096.0);
  CHECK(gate.n == 7168.0);
  CHECK(gate.k == 4096.0);
}

TEST_CASE("A grouped GEMM of few tokens per expert loses tile and wave quantization",
          "[cost][moe]") {
  // 64 experts of width 8192, top 2, ep 8: 8 local experts. A microbatch of 1040 tokens on one
  // GPU (tp 1) sends 2080 copies, 260 per local expert. The H100's 128 x 256 tiles: per expert
  // the gate GEMM (260, 8192, 4096) is 3 x 32 tiles, 8 experts 768 tiles in 6 waves of 132 SMs,
  // quantization 2080·8192 / (6·132·128·256) = 0.6566; one GEMM over all 2080 copies would be
  // 17 x 32 = 544 tiles in 5 waves.
  const Scenario sc = mixtral(
      8, 1, 8,
      {"model.moe.num_experts=64", "model.moe.expert_ffn_hidden=8192", "model.seq_len=1040",
       "cluster.device.kind=gpu", "cluster.device.model=h100-sxm", "training.precision=bf16"});
  const auto ops =
      dtwin::moe_layer_ops(sc.model, sc.layout, sc.training.precision, dtwin::Pass::Forward);
  const auto gate = std::find_if(ops.begin(), ops.end(),
                                 [](const dtwin::Op& op) { return op.name == "expert_gate"; });
  REQUIRE(gate != ops.end());
  CHECK(gate->batch == 8.0);
  CHECK(gate->m == 260.0);
  CHECK(gate->flops == 2 * 2080.0 * 8192 * 4096);
  REQUIRE(sc.cluster.device.description);
  const dtwin::DeviceDescription& h100 = *sc.cluster.device.description;
  REQUIRE(h100.tile_m == 128);
  REQUIRE(h100.tile_n == 256);
  REQUIRE(h100.sm_count == 132);
  const double peak = h100.peak_flops(dtwin::Precision::Bf16) * h100.gemm_efficiency;
  const double compute = 2 * 2080.0 * 8192 * 4096 / (peak * 2080.0 * 8192 / (6 * 132.0 * 32768));
  // each expert's operands and result once, 2 bytes each
  const double bytes = (260.0 * 4096 + 4096.0 * 8192 + 260.0 * 8192) * 8 * 2;
  const double memory = bytes / (h100.memory_bandwidth * h100.memory_efficiency);
  CHECK(dtwin::op_seconds(h100, *gate, sc.training.precision) ==
        Approx(std::max(compute, memory) + h100.kernel_overhead));
  const double merged = 2 * 2080.0 * 8192 * 4096 / (peak * 2080.0 * 8192 / (5 * 132.0 * 32768));
  CHECK(compute == Approx(merged * 6 / 5));
}

TEST_CASE("The cost model charges MoE stages: FLOPs, all-to-alls, parameters, memory, MFU",
          "[cost][moe]") {
  // one stage of 3 dense and 29 MoE layers, tp 2 (sequence parallel), ep 8, etp 1, dp 8: edp 2
  const std::vector<std::string> extra = {"layout.etp=1", "layout.zero=1",
                                          "model.moe.first_dense_layers=3"};
  const Scenario sc = mixtral(8, 2, 8, extra);
  Scenario dense_sc = sc;
  dense_sc.model.moe = {};
  const dtwin::CostModel moe(sc), dense(dense_sc);
  const dtwin::StageCost &c = moe.stage(0), &cd = dense.stage(0);
  CHECK(c.moe_layers == 29);
  const double T = 4096, d = 4096, f = 14336, tp = 2;
  const double dense_mlp_flops = 2 * T * 3 * d * f / tp;
  const double moe_ffn = dtwin::moe_ffn_forward_flops(sc.model, sc.layout, T);
  // F: the dense layers' FLOPs × 32, less 29 dense MLPs, plus 29 MoE feed-forwards
  CHECK(c.forward_flops == Approx(cd.forward_flops + 29 * (moe_ffn - dense_mlp_flops)));
  CHECK(c.weight_backward_flops ==
        Approx(cd.weight_backward_flops + 29 * (moe_ffn - dense_mlp_flops)));
  // 2 all-to-alls per MoE layer in F, 2 in I (no recomputation here); with etp 1 a MoE layer
  // keeps only the attention's half of a dense layer's tensor-parallel collectives (one dense
  // layer's: the 32-layer dense stage's less a 31-layer one's)
  const double a2a =
      dtwin::moe_all_to_all_seconds(sc, dtwin::moe_all_to_all_bytes(sc.model, sc.layout, T, 2));
  CHECK(a2a > 0);
  Scenario shorter = dense_sc;
  shorter.model.n_layers = 31;
  const dtwin::CostModel dense31(shorter);
  const dtwin::StageCost& c31 = dense31.stage(0);
  const double pair_f = cd.tp_forward_s - c31.tp_forward_s;
  const double pair_i = cd.tp_input_backward_s - c31.tp_input_backward_s;
  CHECK(pair_f > 0);
  CHECK(c.tp_forward_s == Approx(cd.tp_forward_s - 29 * pair_f / 2 + 29 * 2 * a2a));
  CHECK(c.tp_input_backward_s == Approx(cd.tp_input_backward_s - 29 * pair_i / 2 + 29 * 2 * a2a));
  // parameters: 29 dense MLPs replaced by the router and the tensor-parallel group's experts,
  // 2 · 1,409,286,144 / 8 per layer
  const double experts = dtwin::expert_params_per_gpu(sc.model, sc.layout);
  CHECK(experts == 176160768.0);
  CHECK(c.params == Approx(cd.params + 29 * (d * 8 + tp * experts - 3 * d * f)));
  // ZeRO 1: bf16 weights and fp32 gradients whole (6 bytes), fp32 states (12) over dp 8 for the
  // dense part and over edp 2 for the experts
  const double rest = c.params / tp - 29 * experts;
  CHECK(moe.static_memory_bytes(0) ==
        Approx((6 + 12.0 / 8) * rest + 29 * (6 + 12.0 / 2) * experts));
  // MFU's model FLOPs: 6 per active non-embedding weight (Mixtral's 12.88B active less the
  // 131,072,000 token embedding) + 12·L·d·s
  const Scenario all_moe = mixtral(8, 2, 8, {"layout.etp=1"});
  CHECK(dtwin::CostModel(all_moe).model_flops_per_token() ==
        Approx(6 * (12879925248.0 - 131072000.0) + 12 * 32 * d * 4096));
  CHECK(dtwin::CostModel(all_moe).total_params() == Approx(46702792704.0));
}
