// Tests of grouped-query attention (model.n_kv_heads) in the cost model, the layer's operators and
// the activation memory: each figure is arithmetic done by hand here from the published shapes
// (LLaMA-3 8B: Meta's model card; the per-GPU split of models/cost/attention_split.hpp), not a
// call to the model's own formulas; n_kv_heads = n_heads must reproduce multi-head attention
// exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/cost/layer_ops.hpp"
#include "models/cost/parallel_memory.hpp"
#include "models/spec/scenario_loader.hpp"

using dtwin::CostModel;
using dtwin::Op;
using dtwin::Scenario;

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";

/// LLaMA-3 8B (vocab 128256, d 4096, 32 layers, 32 query heads, 8 key/value heads, ffn 14336,
/// seq 8192) on tp · ranks_per_device ranks of one device, with `extra` on top.
Scenario llama3_8b(int tp, std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {"model.vocab_size=128256",
                                "model.d_model=4096",
                                "model.n_layers=32",
                                "model.n_heads=32",
                                "model.n_kv_heads=8",
                                "model.ffn_hidden=14336",
                                "model.seq_len=8192",
                                "layout.pp=1",
                                "layout.tp=" + std::to_string(tp),
                                "cluster.ranks_per_device=" + std::to_string(tp)};
  o.insert(o.end(), extra.begin(), extra.end());
  return dtwin::load_scenario(kQuickstart, o);
}

/// The forward operator `name` of one layer of `sc`.
Op forward_op(const Scenario& sc, const std::string& name) {
  for (const Op& op :
       dtwin::layer_ops(sc.model, sc.layout, sc.training.precision, dtwin::Pass::Forward))
    if (op.name == name) return op;
  FAIL("no forward operator " << name);
  return {};
}

}  // namespace

TEST_CASE("LLaMA-3 8B (8 key/value heads) has 8,030,261,248 parameters", "[cost][gqa]") {
  const CostModel m(llama3_8b(1));
  // per layer: q and o 2·4096² = 33,554,432; k and v 2·4096·(8·128) = 8,388,608;
  // SwiGLU 3·4096·14336 = 176,160,768; two RMSNorms 8,192
  const double layer = 33554432.0 + 8388608.0 + 176160768.0 + 8192.0;
  // embedding and untied head 128256·4096 = 525,336,576 each; final norm 4,096
  const double total = 32 * layer + 2 * 525336576.0 + 4096.0;
  CHECK(total == 8030261248.0);  // Meta-Llama-3-8B's published count
  CHECK(m.total_params() == total);
  CHECK(m.stage(0).params == total);
}

TEST_CASE("GQA model FLOPs are NeMo's Llama 3 count plus the norms", "[cost][gqa]") {
  // NVIDIA dgxc-benchmarking llama3.1/README_8b.md, per token: 12·L·h²·(1 + kv/a + s/h)
  // + 18·L·f·h + 6·V·h; dtwin's 6N + 12·L·d·s also charges 6 FLOPs to each norm weight.
  const double L = 32, h = 4096, s = 8192, f = 14336, V = 128256;
  const double nemo = 12 * L * h * h * (1 + 8.0 / 32 + s / h) + 18 * L * f * h + 6 * V * h;
  const double norms = 6 * (2 * h * L + h);
  CHECK(CostModel(llama3_8b(1)).model_flops_per_token() == Approx(nemo + norms).epsilon(1e-12));
  CHECK(nemo * s == Approx(4.74e14).epsilon(0.005));  // the README's figure per sequence
}

TEST_CASE("GQA's QKV GEMM and rotary embedding shrink with the key/value heads", "[cost][gqa]") {
  const double T = 8192, d = 4096, hd = 128;
  for (const int tp : {1, 2, 4, 8}) {
    INFO("tp " << tp);
    const Scenario sc = llama3_8b(tp, {"training.precision=bf16"});
    // per GPU: 32/tp query heads and 8/tp key/value heads of 128 columns
    const double n = (32.0 / tp + 2 * 8.0 / tp) * hd;
    const Op qkv = forward_op(sc, "qkv");
    CHECK(qkv.n == n);
    CHECK(qkv.k == d);
    CHECK(qkv.flops == 2 * T * n * d);
    // rotary reads and writes q (32/tp heads) and k (8/tp heads) at 2 bytes
    CHECK(forward_op(sc, "rotary").bytes == 2 * 2 * T * (32.0 / tp + 8.0 / tp) * hd);
    // the attention core is per query head: 32/tp heads of 128, whatever the key/value heads
    CHECK(forward_op(sc, "attention").attention.batch_heads == 32.0 / tp);
    CHECK(forward_op(sc, "attention").flops == 4 * (32.0 / tp) * T * T * hd);
    // the layer's forward weight FLOPs per GPU: 2·T·(per-layer matrix weights)/tp
    const CostModel m(sc);
    const double matmul = 33554432.0 + 8388608.0 + 176160768.0;
    CHECK(m.stage(0).weight_backward_flops ==
          Approx(32 * 2 * T * matmul / tp + 2 * T * d * 128256 / tp));
  }
}

TEST_CASE("Multi-query attention on tp 8 replicates its key/value head on every GPU",
          "[cost][gqa]") {
  // One key/value head (n_kv_heads 1) over 8 GPUs: each holds a copy (k and v: 2·d·hd weights).
  const Scenario sc = llama3_8b(8, {"model.n_kv_heads=1", "training.precision=bf16"});
  const double T = 8192, d = 4096, hd = 128, f = 14336;
  CHECK(forward_op(sc, "qkv").n == (32.0 / 8 + 2) * hd);
  CHECK(forward_op(sc, "rotary").bytes == 2 * T * (4 + 1) * hd * 2);  // read and written, bf16
  const CostModel m(sc);
  const double own = 2 * d * d + 2 * d * hd + 3 * d * f + 2 * d;  // the layer's parameters
  const double held = own + 7 * 2 * d * hd;                       // + 7 more copies of k and v
  const double ends = 2 * 128256.0 * d + d;
  CHECK(m.total_params() == 32 * own + ends);
  CHECK(m.stage(0).params == 32 * held + ends);
  // one GPU: 1/8 of q, o and the MLP, a whole k and v
  const double per_gpu_layer = (2 * d * d + 3 * d * f + 2 * d) / 8 + 2 * d * hd;
  CHECK(m.stage(0).params / 8 == Approx(32 * per_gpu_layer + ends / 8).epsilon(1e-12));
  // bf16 weights, fp32 gradients, fp32 master weights and Adam moments: 18 bytes each
  CHECK(m.static_memory_bytes(0) == Approx(18 * (32 * per_gpu_layer + ends / 8)).epsilon(1e-12));
  // activations per layer: fp32 norms 2·(4 + 2·2)·sbh; bf16 q and output sbh/8 each, the
  // replicated k and v s·b·hd each, the eager softmax 32·s²·b/8 and SwiGLU 4·sbf/8; the embedding's
  // output T·d·2 and the fp32 log-softmax T·V·4/8
  const double sbh = T * d;  // b = 1, s = T
  const double layer_kept =
      16 * sbh + 2 * (2 * sbh / 8 + 2 * T * hd + 32 * T * T / 8 + 4 * T * f / 8);
  CHECK(m.stage(0).activation_bytes ==
        Approx(32 * layer_kept + T * d * 2 + T * 128256.0 * 4 / 8).epsilon(1e-12));
  // forward weight FLOPs per GPU count the replicated projections
  const double matmul_per_gpu = (2 * d * d + 3 * d * f) / 8 + 2 * d * hd;
  CHECK(m.stage(0).forward_flops ==
        Approx(32 * (2 * T * matmul_per_gpu + 4 * T * T * d / 8) + 2 * T * d * 128256 / 8)
            .epsilon(1e-12));
}

TEST_CASE("GQA keeps K and V at their own width in the activations", "[cost][gqa]") {
  const double s = 2048, b = 2, h = 4096, a = 32, f = 14336;
  const double sbh = s * b * h, sbf = s * b * f;
  for (const int t : {1, 4, 8})
    for (const double kv : {32.0, 8.0, 1.0}) {
      INFO("t " << t << " kv " << kv);
      const double r = std::max(kv, double(t)) / a;  // K's width per GPU over Q's
      const dtwin::LayerActivationShape llama{s, b, h, a, f, t, false, dtwin::ModelFamily::Llama,
                                              r};
      // fp32 norms 2·(4 + 2·2)·sbh; q, k, v, output (2 + 2r)·sbh and SwiGLU 4·sbf at 2 bytes, /t
      CHECK(dtwin::layer_activation_bytes(llama, dtwin::Recompute::None, dtwin::Attention::Flash,
                                          2) ==
            Approx(16 * sbh + 2 * ((2 + 2 * r) * sbh + 4 * sbf) / t).epsilon(1e-12));
      // Korthikanti et al. Table 2, selective: sbh·(10 + 24/t), the 24 being Q 2, K 2, V 2, the
      // output projection's input 2 and the MLP 16; K and V shrink to 2r each
      const dtwin::LayerActivationShape gpt{s, b, h, a, 4 * h, t, false, dtwin::ModelFamily::Gpt2,
                                            r};
      CHECK(dtwin::layer_activation_bytes(gpt, dtwin::Recompute::Selective, dtwin::Attention::Flash,
                                          2) ==
            Approx(sbh * (10 + (2 + 2 * r + 2 * r + 2 + 16) / t)).epsilon(1e-12));
    }
}

TEST_CASE("n_kv_heads = n_heads is multi-head attention, figure for figure", "[cost][gqa]") {
  const std::vector<std::vector<std::string>> layouts = {
      {"cluster.ranks_per_device=3"},
      {"layout.tp=2", "layout.sequence_parallel=true", "cluster.ranks_per_device=6"}};
  for (const auto& layout : layouts)
    for (const std::string& family : {"llama", "gpt2"}) {
      INFO(family << " " << layout.front());
      std::vector<std::string> mha = layout;
      mha.insert(mha.end(), {"model.family=" + family, "layout.recompute=selective",
                             "training.precision=bf16"});
      std::vector<std::string> gqa = mha;
      gqa.push_back("model.n_kv_heads=6");  // quickstart's n_heads
      const CostModel x(dtwin::load_scenario(kQuickstart, mha));
      const CostModel y(dtwin::load_scenario(kQuickstart, gqa));
      CHECK(x.total_params() == y.total_params());
      for (int s = 0; s < x.num_stages(); ++s) {
        CHECK(x.stage(s).params == y.stage(s).params);
        CHECK(x.stage(s).forward_flops == y.stage(s).forward_flops);
        CHECK(x.stage(s).input_backward_flops == y.stage(s).input_backward_flops);
        CHECK(x.stage(s).weight_backward_flops == y.stage(s).weight_backward_flops);
        CHECK(x.stage(s).activation_bytes == y.stage(s).activation_bytes);
        CHECK(x.stage(s).input_backward_freed_bytes == y.stage(s).input_backward_freed_bytes);
      }
    }
}
