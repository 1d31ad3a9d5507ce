// Context parallelism (layout.cp): the key/value exchange's closed forms
// (models/cost/context_parallel.hpp) worked out by hand here, the links its group crosses, and
// what splitting each sequence over cp GPUs does to a stage's per-GPU FLOPs, activations and
// ZeRO shards.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/cost/context_parallel.hpp"
#include "models/cost/cost_model.hpp"
#include "models/spec/scenario_loader.hpp"

using namespace dtwin;

namespace {

// LLaMA-3 70B's attention (d 8192, 64 heads, 8 key/value heads of 128) at 32K tokens, tp 8:
// one key/value head per GPU, c = 128 columns; q = 8 · 128 = 1024.
ModelSpec llama3_70b_attention() {
  ModelSpec m;
  m.d_model = 8192;
  m.n_heads = 64;
  m.n_kv_heads = 8;
  m.seq_len = 32768;
  return m;
}

// A DGX H100 node: 8 GPUs, NVLink 450 GB/s (3 µs), 3200 Gb/s = 400 GB/s of InfiniBand (5 µs).
Scenario dgx(int tp, int cp, CpCommType type) {
  Scenario s;
  s.model = llama3_70b_attention();
  s.layout.tp = tp;
  s.layout.cp = cp;
  s.layout.cp_comm_type = type;
  s.cluster.devices_per_node = 8;
  s.cluster.intra_node = {450e9, 3e-6};
  s.cluster.inter_node = {400e9, 5e-6};
  return s;
}

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";

// quickstart's LLaMA (seq 256) with flash attention on dp·cp ranks of one device.
Scenario quickstart(int dp, int cp, std::vector<std::string> extra = {}) {
  std::vector<std::string> sets{
      "model.attention=flash", "layout.pp=1", "layout.dp=" + std::to_string(dp),
      "layout.cp=" + std::to_string(cp), "cluster.ranks_per_device=" + std::to_string(dp * cp)};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_scenario(kQuickstart, sets);
}

}  // namespace

TEST_CASE("CP exchange bytes per layer: p2p and all_gather move K and V, a2a q, k, v and out",
          "[cost][cp]") {
  const ModelSpec m = llama3_70b_attention();
  LayoutSpec l;
  l.tp = 8;
  l.cp = 4;
  const double Tc = 32768 / 4, e = 2;  // tokens per GPU, bf16
  for (CpCommType type : {CpCommType::P2p, CpCommType::AllGather}) {
    l.cp_comm_type = type;
    // 3 ring steps of K and V: 3 · 2 · 8192 · 128 · 2 bytes; the backward adds dK and dV.
    CHECK(cp_exchange_bytes(m, l, Tc, e, false) == 12582912);
    CHECK(cp_exchange_bytes(m, l, Tc, e, true) == 25165824);
  }
  l.cp_comm_type = CpCommType::A2a;
  // 3/4 of q (1024), k and v (128 each) and out (1024) columns of 8192 tokens.
  CHECK(cp_exchange_bytes(m, l, Tc, e, false) == 0.75 * 8192 * (2048 + 256) * 2);
  CHECK(cp_exchange_bytes(m, l, Tc, e, true) == 0.75 * 8192 * (2048 + 256) * 2);
  l.cp = 1;
  CHECK(cp_exchange_bytes(m, l, 32768, e, true) == 0);
}

TEST_CASE("CP exchange seconds: a ring inside a node, or a GPU's share of the node's link",
          "[cost][cp]") {
  const double bytes = 12582912;
  // tp 2 · cp 4 = 8 GPUs, one node: 3 NVLink steps.
  const Scenario near = dgx(2, 4, CpCommType::P2p);
  CHECK(cp_exchange_seconds(near, bytes) == Approx(3 * 3e-6 + bytes / 450e9));
  // tp 8 · cp 2 = 16 GPUs: the ring's hop leaves the node, each GPU with 400/8 = 50 GB/s.
  const Scenario far = dgx(8, 2, CpCommType::P2p);
  CHECK(cp_exchange_seconds(far, bytes) == Approx(5e-6 + bytes / 50e9));
  // a2a over 4 GPUs of a node: one latency, all bytes over NVLink.
  CHECK(cp_exchange_seconds(dgx(2, 4, CpCommType::A2a), bytes) == Approx(3e-6 + bytes / 450e9));
}

TEST_CASE("p2p hides each ring step under a 1/cp share of the attention, the others do not",
          "[cost][cp]") {
  const double bytes = 12582912;  // F: 3 sends of one 4 MiB K/V chunk
  const double u = 3e-6 + 4194304 / 450e9, u2 = 3e-6 + 2 * 4194304 / 450e9;
  const Scenario p2p = dgx(2, 4, CpCommType::P2p);
  CHECK(cp_exposed_seconds(p2p, bytes, 1.0, false) == 0);
  CHECK(cp_exposed_seconds(p2p, bytes, 0, false) == Approx(3 * u));
  CHECK(cp_exposed_seconds(p2p, bytes, 4 * u / 2, false) == Approx(3 * u / 2));  // half hidden
  // backward: 4 steps sending K/V, K/V + dK/dV twice, then dK/dV: 2 one-chunk and 2 two-chunk
  const double attention = 4 * u;  // each quarter hides a one-chunk step, u of a two-chunk one
  CHECK(cp_exposed_seconds(p2p, 2 * bytes, attention, true) == Approx(2 * (u2 - u)));
  CHECK(cp_exposed_seconds(p2p, 2 * bytes, 0, true) == Approx(2 * u + 2 * u2));
  const Scenario gather = dgx(2, 4, CpCommType::AllGather);
  CHECK(cp_exposed_seconds(gather, bytes, 1.0, false) ==
        Approx(cp_exchange_seconds(gather, bytes)));
}

TEST_CASE("cp = 2 halves a GPU's FLOPs, tokens and activations, not its parameters or N",
          "[cost][cp]") {
  const CostModel whole(quickstart(1, 1)), halves(quickstart(1, 2));
  CHECK(halves.tokens_per_microbatch() == 128);  // 256 tokens over 2 GPUs
  const StageCost &a = whole.stage(0), &b = halves.stage(0);
  CHECK(b.forward_flops == Approx(a.forward_flops / 2));
  CHECK(b.input_backward_flops == Approx(a.input_backward_flops / 2));
  CHECK(b.weight_backward_flops == Approx(a.weight_backward_flops / 2));
  CHECK(b.activation_bytes == Approx(a.activation_bytes / 2));
  CHECK(b.params == a.params);
  CHECK(halves.model_flops_per_token() == whole.model_flops_per_token());
  CHECK(halves.boundary_bytes() == Approx(whole.boundary_bytes() / 2));
}

TEST_CASE("ZeRO shards over dp·cp: dp 2 · cp 2 holds what dp 4 does", "[cost][cp]") {
  const CostModel cp(quickstart(2, 2, {"layout.zero=1"})), dp(quickstart(4, 1, {"layout.zero=1"}));
  CHECK(cp.static_memory_bytes(0) == Approx(dp.static_memory_bytes(0)));
  CHECK(cp.static_memory_bytes(0) <
        CostModel(quickstart(2, 1, {"layout.zero=1"})).static_memory_bytes(0));
}
