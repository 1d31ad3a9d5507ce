// Tests of the kernel-level compute model: device descriptions (models/device_description), kernel
// times (models/kernel_model) and the operators of a layer (models/layer_ops).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "models/cost/cost_model.hpp"
#include "models/cost/kernel_model.hpp"
#include "models/cost/layer_ops.hpp"
#include "models/cost/memory_budget.hpp"
#include "models/spec/device_description.hpp"

using dtwin::Attention;
using dtwin::AttentionCore;
using dtwin::ConfigError;
using dtwin::DeviceDescription;
using dtwin::load_device_description;
using dtwin::ModelFamily;
using dtwin::Op;
using dtwin::OpKind;
using dtwin::Pass;
using dtwin::Precision;

namespace {

/// A small made-up GPU whose GEMMs are never memory-bound and whose kernels have no overhead,
/// so that times follow the quantization formula exactly.
DeviceDescription toy_device() {
  return DeviceDescription{.source = "",
                           .name = "toy",
                           .bf16_flops = 100e12,
                           .fp32_flops = 10e12,
                           .sm_count = 4,
                           .memory_bandwidth = 1e18,
                           .memory = 1e9,
                           .tile_m = 128,
                           .tile_n = 128,
                           .gemm_efficiency = 0.5,
                           .attention_forward_efficiency = 0.5,
                           .attention_backward_efficiency = 0.4,
                           .memory_efficiency = 0.8,
                           .kernel_overhead = 0,
                           .overlap_slowdown = 1};
}

/// The bare names of every shipped device description (models/devices/*.yaml), sorted.
std::vector<std::string> shipped_devices() {
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(DTWIN_SOURCE_DIR) + "/models/devices"))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<std::string> kDevices = shipped_devices();

/// A one-layer-per-stage model of `family` split over pp = 2 (stage 0: embedding and layer 0).
dtwin::Scenario scenario_of(ModelFamily family, Attention attention, int tp, bool sp) {
  dtwin::Scenario sc;
  sc.model.family = family;
  sc.model.attention = attention;
  sc.model.vocab_size = 32000;
  sc.model.d_model = 1024;
  sc.model.n_layers = 2;
  sc.model.n_heads = 16;
  sc.model.ffn_hidden = family == ModelFamily::Llama ? 2816 : 4096;
  sc.model.seq_len = 2048;
  sc.layout.pp = 2;
  sc.layout.tp = tp;
  sc.layout.sequence_parallel = sp;
  sc.layout.micro_batch_size = 2;
  sc.training.precision = Precision::Bf16;
  return sc;
}

std::vector<Op> ops(const dtwin::Scenario& sc, Pass pass) {
  return dtwin::layer_ops(sc.model, sc.layout, sc.training.precision, pass);
}

/// Sum of the FLOPs of the ops of `kind`.
double flops(const std::vector<Op>& ops, OpKind kind) {
  double sum = 0;
  for (const Op& op : ops) sum += op.kind == kind ? op.flops : 0;
  return sum;
}

const Op& find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  FAIL("no op " << name);
  return ops.front();
}

/// The message load_device_description throws for `path`, or "" if it loads.
std::string load_error(const std::string& path) {
  try {
    load_device_description(path, "");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

/// What loading the shipped H100 file with line `line` (1-based) replaced by `text` throws.
struct Loaded {
  std::string path;   ///< the altered file (removed again)
  std::string error;  ///< the ConfigError's message, or "" if it loads
};

Loaded load_h100_with(int line, const std::string& text) {
  std::ifstream in(std::string(DTWIN_SOURCE_DIR) + "/models/devices/h100-sxm.yaml");
  std::string out, l;
  for (int i = 1; std::getline(in, l); ++i) out += (i == line ? text : l) + "\n";
  // One file per process and line: CTest may run test cases in parallel.
  const std::string name =
      "dtwin_test_device." + std::to_string(::getpid()) + "." + std::to_string(line) + ".yaml";
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << out;
  Loaded loaded{path, load_error(path)};
  std::filesystem::remove(path);
  return loaded;
}

/// The 1-based line of the shipped H100 file that starts with `key`.
int h100_line(const std::string& key) {
  std::ifstream in(std::string(DTWIN_SOURCE_DIR) + "/models/devices/h100-sxm.yaml");
  std::string l;
  for (int i = 1; std::getline(in, l); ++i) {
    if (l.rfind(key + ":", 0) == 0) return i;
  }
  return 0;
}

}  // namespace

TEST_CASE("a GEMM one tile past a full wave takes a second wave", "[kernel]") {
  const DeviceDescription d = toy_device();
  const double k = 8192;
  // sm_count (4) tiles of 128 × 128: one wave; five tiles, the same work per tile: two waves.
  const double one_wave = dtwin::gemm_seconds(d, 2 * 128, 2 * 128, k, Precision::Bf16);
  const double two_waves = dtwin::gemm_seconds(d, 5 * 128, 128, k, Precision::Bf16);
  CHECK(two_waves / one_wave == Approx(2).epsilon(1e-12));
  // A partial tile costs a whole one: 129 rows take as long as 256.
  CHECK(dtwin::gemm_seconds(d, 129, 128, k, Precision::Bf16) ==
        Approx(dtwin::gemm_seconds(d, 256, 128, k, Precision::Bf16)));
  // A full wave runs at gemm_efficiency × peak.
  CHECK(2 * 256 * 256 * k / one_wave == Approx(0.5 * 100e12));
  // fp32 runs at the fp32 peak.
  CHECK(dtwin::gemm_seconds(d, 256, 256, k, Precision::Fp32) == Approx(10 * one_wave));
}

TEST_CASE("a GEMM of small arithmetic intensity is bound by memory", "[kernel]") {
  DeviceDescription d = toy_device();
  d.memory_bandwidth = 1e12;
  const double m = 4 * 128, n = 128, k = 16;  // one wave, 2 FLOPs per 2-byte element read
  const double bytes = (m * k + k * n + m * n) * 2;
  CHECK(dtwin::gemm_seconds(d, m, n, k, Precision::Bf16) == Approx(bytes / (1e12 * 0.8)));
}

TEST_CASE("a large wave-aligned GEMM reaches gemm_efficiency of the peak", "[kernel]") {
  const std::string name = GENERATE(from_range(kDevices));
  INFO(name);
  const DeviceDescription d = load_device_description(name, "");
  const double m = 2.0 * d.tile_m * d.sm_count, n = 8.0 * d.tile_n, k = 16384;
  const double seconds = dtwin::gemm_seconds(d, m, n, k, Precision::Bf16);
  CHECK(2 * m * n * k / seconds == Approx(d.gemm_efficiency * d.bf16_flops).epsilon(0.01));
}

TEST_CASE("memory-bound time is linear in bytes", "[kernel]") {
  const std::string name = GENERATE(from_range(kDevices));
  INFO(name);
  const DeviceDescription d = load_device_description(name, "");
  const double gb = 1e9;
  const double t1 = dtwin::memory_bound_seconds(d, gb), t2 = dtwin::memory_bound_seconds(d, 2 * gb),
               t5 = dtwin::memory_bound_seconds(d, 5 * gb);
  CHECK(t2 - t1 == Approx(gb / (d.memory_bandwidth * d.memory_efficiency)));
  CHECK(t5 - t1 == Approx(4 * (t2 - t1)));
  CHECK(dtwin::memory_bound_seconds(d, 0) == Approx(d.kernel_overhead));
  CHECK(dtwin::optimizer_seconds(d, 1e9) == Approx(dtwin::memory_bound_seconds(d, 28e9)));
}

TEST_CASE("attention: flash follows its FLOPs, eager its GEMMs and score traffic", "[kernel]") {
  const std::string name = GENERATE(from_range(kDevices));
  INFO(name);
  const DeviceDescription d = load_device_description(name, "");
  AttentionCore core;
  core.batch_heads = 32;
  core.seq_len = 4096;
  core.head_dim = 128;
  const double forward_flops = 4 * 32 * 4096.0 * 4096 * 128;
  CHECK(dtwin::attention_flops(core) == forward_flops);
  // a causal mask (the default) skips the upper blocks: 1.75 times faster than without it
  CHECK(d.attention_causal_speedup == 1.75);
  CHECK(dtwin::attention_seconds(d, core, Precision::Bf16) ==
        Approx(forward_flops / (d.bf16_flops * d.attention_forward_efficiency * 1.75) +
               d.kernel_overhead));
  AttentionCore full = core;
  full.causal = false;
  CHECK(
      dtwin::attention_seconds(d, full, Precision::Bf16) ==
      Approx(forward_flops / (d.bf16_flops * d.attention_forward_efficiency) + d.kernel_overhead));
  // context parallelism: 1024 queries over 4096 keys, a quarter of the work
  AttentionCore quarter = core;
  quarter.seq_len = 1024;
  quarter.key_len = 4096;
  CHECK(dtwin::attention_flops(quarter) == forward_flops / 4);
  AttentionCore backward = core;
  backward.backward = true;
  CHECK(dtwin::attention_flops(backward) == 2.5 * forward_flops);

  AttentionCore eager = core;
  eager.kind = Attention::Eager;
  const double scores = 32 * 4096.0 * 4096;
  const double gemms = dtwin::gemm_seconds(d, 4096, 4096, 128, Precision::Bf16, 32) +
                       dtwin::gemm_seconds(d, 4096, 128, 4096, Precision::Bf16, 32);
  CHECK(dtwin::attention_seconds(d, eager, Precision::Bf16) ==
        Approx(gemms + dtwin::memory_bound_seconds(d, 2 * scores * 2)));
  AttentionCore dropped = eager;
  dropped.dropout = true;
  CHECK(dtwin::attention_seconds(d, dropped, Precision::Bf16) ==
        Approx(gemms + dtwin::memory_bound_seconds(d, 2 * scores * 2) +
               dtwin::memory_bound_seconds(d, 2 * scores * 2 + scores)));
  CHECK(dtwin::attention_seconds(d, eager, Precision::Bf16) >
        dtwin::attention_seconds(d, core, Precision::Bf16));
  eager.backward = true;
  CHECK(dtwin::attention_flops(eager) == 2 * forward_flops);
}

TEST_CASE("a layer's GEMM FLOPs match CostModel's closed form", "[kernel]") {
  for (const ModelFamily family : {ModelFamily::Llama, ModelFamily::Gpt2})
    for (const int tp : {1, 2, 4})
      for (const int kv : {16, 4, 1}) {  // multi-head, grouped-query, multi-query attention
        INFO("family " << static_cast<int>(family) << ", tp " << tp << ", kv " << kv);
        dtwin::Scenario sc = scenario_of(family, Attention::Eager, tp, tp > 1);
        sc.model.n_kv_heads = kv;
        const double T = 2 * 2048, d = 1024, f = sc.model.ffn_hidden;
        // q and o d×d; k and v d×kv·64 per key/value head, replicated where tp > kv (per GPU)
        const double attention = 2 * d * d + 2 * d * 64 * std::max(kv, tp);
        const double Wm =
            family == ModelFamily::Llama ? attention + 3 * d * f : attention + 2 * d * f;
        const std::vector<Op> F = ops(sc, Pass::Forward), I = ops(sc, Pass::InputBackward),
                              W = ops(sc, Pass::WeightBackward);
        const double forward_gemm = flops(F, OpKind::Gemm);
        CHECK(forward_gemm == Approx(2 * T * Wm / tp));
        CHECK(flops(I, OpKind::Gemm) + flops(W, OpKind::Gemm) == Approx(2 * forward_gemm));
        CHECK(flops(W, OpKind::Gemm) == Approx(forward_gemm));
        CHECK(flops(W, OpKind::Attention) == 0);

        // Stage 0 holds one layer and the embedding (no FLOPs in CostModel).
        const dtwin::StageCost cost = dtwin::CostModel(sc).stage(0);
        CHECK(forward_gemm + flops(F, OpKind::Attention) == Approx(cost.forward_flops));
        CHECK(flops(I, OpKind::Gemm) + flops(I, OpKind::Attention) ==
              Approx(cost.input_backward_flops));
        CHECK(flops(W, OpKind::Gemm) == Approx(cost.weight_backward_flops));

        const std::vector<Op> head =
            dtwin::head_ops(sc.model, sc.layout, Precision::Bf16, Pass::Forward);
        CHECK(flops(head, OpKind::Gemm) == Approx(2 * T * d * 32000 / tp));
      }
}

TEST_CASE("backward GEMMs transpose the forward shapes", "[kernel]") {
  const dtwin::Scenario sc = scenario_of(ModelFamily::Llama, Attention::Flash, 2, false);
  const std::vector<Op> F = ops(sc, Pass::Forward), I = ops(sc, Pass::InputBackward),
                        W = ops(sc, Pass::WeightBackward);
  const Op& qkv = find(F, "qkv");
  CHECK((qkv.m == 4096 && qkv.n == 3 * 1024 / 2 && qkv.k == 1024));
  const Op& dgrad = find(I, "qkv dgrad");
  CHECK((dgrad.m == qkv.m && dgrad.n == qkv.k && dgrad.k == qkv.n));
  const Op& wgrad = find(W, "qkv wgrad");
  CHECK((wgrad.m == qkv.k && wgrad.n == qkv.n && wgrad.k == qkv.m));
  const Op& down = find(F, "mlp_down");
  CHECK((down.n == 1024 && down.k == 2816 / 2));
  // The backward runs in reverse: the last forward GEMM's dgrad comes first.
  CHECK(I.front().name == "mlp_residual backward");
  CHECK(I.back().name == "input_norm backward");
  // The embedding has only a forward and a weight gradient.
  CHECK(dtwin::embedding_ops(sc.model, sc.layout, Precision::Bf16, Pass::InputBackward).empty());
  CHECK(dtwin::embedding_ops(sc.model, sc.layout, Precision::Bf16, Pass::WeightBackward).size() ==
        1);
}

TEST_CASE("tensor parallelism halves a GPU's GEMM FLOPs and sequence parallelism its norms",
          "[kernel]") {
  const dtwin::Scenario tp1 = scenario_of(ModelFamily::Gpt2, Attention::Flash, 1, false);
  const dtwin::Scenario tp2 = scenario_of(ModelFamily::Gpt2, Attention::Flash, 2, false);
  const dtwin::Scenario sp2 = scenario_of(ModelFamily::Gpt2, Attention::Flash, 2, true);
  for (const Pass pass : {Pass::Forward, Pass::InputBackward, Pass::WeightBackward}) {
    CHECK(flops(ops(tp2, pass), OpKind::Gemm) == Approx(flops(ops(tp1, pass), OpKind::Gemm) / 2));
    CHECK(flops(ops(tp2, pass), OpKind::Attention) ==
          Approx(flops(ops(tp1, pass), OpKind::Attention) / 2));
  }
  const std::vector<Op> F1 = ops(tp1, Pass::Forward), F2 = ops(tp2, Pass::Forward),
                        S2 = ops(sp2, Pass::Forward);
  const double norm1 = find(F1, "input_norm").bytes;
  CHECK(find(F2, "input_norm").bytes == norm1);
  CHECK(find(S2, "input_norm").bytes == Approx(norm1 / 2));
  CHECK(find(F2, "gelu").bytes == Approx(find(F1, "gelu").bytes / 2));
}

TEST_CASE("tensor parallelism halves the time of GEMMs many waves deep", "[kernel]") {
  dtwin::Scenario tp1 = scenario_of(ModelFamily::Gpt2, Attention::Flash, 1, false);
  tp1.model.d_model = 4096;
  tp1.model.n_heads = 32;
  tp1.model.ffn_hidden = 16384;
  dtwin::Scenario tp2 = tp1;
  tp2.layout.tp = 2;
  const DeviceDescription d = load_device_description("h100-sxm", "");
  const dtwin::PassSeconds s1 = dtwin::layer_seconds(d, tp1.model, tp1.layout, Precision::Bf16);
  const dtwin::PassSeconds s2 = dtwin::layer_seconds(d, tp2.model, tp2.layout, Precision::Bf16);
  CHECK(s2.weight_backward == Approx(s1.weight_backward / 2).epsilon(0.05));  // GEMMs only
  CHECK(s2.forward < s1.forward);
  CHECK(s2.forward > s1.forward / 2);  // the norms and residual adds are not split
}

TEST_CASE("layer seconds are the sums of their ops' seconds", "[kernel]") {
  const std::string name = GENERATE(from_range(kDevices));
  INFO(name);
  const DeviceDescription d = load_device_description(name, "");
  const dtwin::Scenario sc = scenario_of(ModelFamily::Llama, Attention::Flash, 2, true);
  const auto sum = [&](const std::vector<Op>& ops) {
    double s = 0;
    for (const Op& op : ops) s += dtwin::op_seconds(d, op, Precision::Bf16);
    return s;
  };
  const dtwin::PassSeconds layer = dtwin::layer_seconds(d, sc.model, sc.layout, Precision::Bf16);
  CHECK(layer.forward == Approx(sum(ops(sc, Pass::Forward))));
  CHECK(layer.input_backward == Approx(sum(ops(sc, Pass::InputBackward))));
  CHECK(layer.weight_backward == Approx(sum(ops(sc, Pass::WeightBackward))));
  const dtwin::PassSeconds head = dtwin::head_seconds(d, sc.model, sc.layout, Precision::Bf16);
  CHECK(head.forward ==
        Approx(sum(dtwin::head_ops(sc.model, sc.layout, Precision::Bf16, Pass::Forward))));
  const dtwin::PassSeconds embedding =
      dtwin::embedding_seconds(d, sc.model, sc.layout, Precision::Bf16);
  CHECK(embedding.input_backward == 0);
  CHECK(embedding.weight_backward > 0);
}

TEST_CASE("the shipped device files load", "[device]") {
  const DeviceDescription a100 = load_device_description("a100-80gb-sxm", "");
  CHECK(a100.bf16_flops == Approx(312e12));
  CHECK(a100.fp32_flops == Approx(19.5e12));
  CHECK(a100.sm_count == 108);
  CHECK(a100.memory_bandwidth == Approx(2039e9));
  CHECK(a100.memory == Approx(80e9));
  CHECK(a100.peak_flops(Precision::Fp32) == a100.fp32_flops);
  CHECK(!a100.has_fp8());  // its file gives no fp8_flops

  // A path is taken relative to the scenario that names it.
  const std::string scenario = std::string(DTWIN_SOURCE_DIR) + "/scenarios/any.yaml";
  const DeviceDescription h100 =
      load_device_description("../models/devices/h100-sxm.yaml", scenario);
  CHECK(h100.name == "H100 SXM");
  CHECK(h100.bf16_flops == Approx(989e12));
  CHECK(h100.has_fp8());
  CHECK(h100.fp8_flops == Approx(1979e12));
  CHECK(h100.fp32_flops == Approx(67e12));
  CHECK(h100.sm_count == 132);
  CHECK(h100.memory_bandwidth == Approx(3.35e12));
  CHECK((h100.tile_m == 128 && h100.tile_n == 256));
  CHECK(h100.overlap_slowdown >= 1);
  for (const DeviceDescription& d : {a100, h100}) {
    CHECK(d.reserved_memory == 723.0 * (1 << 20));
    CHECK(d.allocator_fragmentation == Approx(0.08));
  }
}

TEST_CASE("the H800, H200 and B200 files give their datasheets' peaks and memory", "[device]") {
  // The H800 and H200 are the H100's die: its compute, and so its efficiencies.
  const DeviceDescription h100 = load_device_description("h100-sxm", "");
  for (const std::string name : {"h800-sxm", "h200-sxm"}) {
    INFO(name);
    const DeviceDescription d = load_device_description(name, "");
    CHECK(d.bf16_flops == h100.bf16_flops);
    CHECK(d.fp8_flops == h100.fp8_flops);
    CHECK(d.fp32_flops == h100.fp32_flops);
    CHECK(d.sm_count == h100.sm_count);
    CHECK(d.gemm_efficiency == h100.gemm_efficiency);
  }
  const DeviceDescription h200 = load_device_description("h200-sxm", "");
  CHECK(h200.memory == Approx(141e9));
  CHECK(h200.memory_bandwidth == Approx(4.8e12));
  const DeviceDescription b200 = load_device_description("b200", "");
  CHECK(b200.bf16_flops == Approx(2.25e15));
  CHECK(b200.fp8_flops == Approx(4.5e15));
  CHECK(b200.sm_count == 148);
  CHECK(b200.memory == Approx(180e9));
  CHECK(b200.gemm_efficiency == Approx(0.65));
}

TEST_CASE("a shipped description's fp8 peak, where it has one, is twice its bf16 peak",
          "[device]") {
  const std::string name = GENERATE(from_range(kDevices));
  INFO(name);
  const DeviceDescription d = load_device_description(name, "");
  // The datasheets round: the H100's 1,979 and 989 TFLOP/s are 2 x 989.4 and 989.4.
  if (d.has_fp8()) CHECK(d.fp8_flops == Approx(2 * d.bf16_flops).epsilon(1e-3));
}

TEST_CASE("a rank's tensors may use its share of the device less the context and fragmentation",
          "[device]") {
  dtwin::ClusterSpec cluster;
  cluster.device.memory = 80e9;
  cluster.ranks_per_device = 2;
  // No description (a CPU, or a GPU given by peak and memory): the whole share.
  CHECK(dtwin::tensor_memory_per_rank(cluster) == 40e9);
  cluster.device.description = load_device_description("a100-80gb-sxm", "");
  // (40 GB - 723 MiB of CUDA context) x (1 - 0.08 fragmented).
  CHECK(dtwin::tensor_memory_per_rank(cluster) == Approx((40e9 - 723.0 * (1 << 20)) * 0.92));
  cluster.device.memory = 1e8;  // less than two contexts: nothing left
  CHECK(dtwin::tensor_memory_per_rank(cluster) == 0);
}

TEST_CASE("a bad device file or name is a ConfigError naming file, line and key", "[device]") {
  const int bandwidth = h100_line("memory_bandwidth");
  REQUIRE(bandwidth > 0);
  /// The message starts "FILE:LINE:" and names the key.
  const auto check = [](const Loaded& loaded, int line, const std::string& what) {
    INFO(loaded.error);
    CHECK(loaded.error.rfind(loaded.path + ":" + std::to_string(line) + ":", 0) == 0);
    CHECK(loaded.error.find(what) != std::string::npos);
  };
  check(load_h100_with(bandwidth, "memory_bandwidth: 3.35TB"), bandwidth,
        "memory_bandwidth: expected a bandwidth");
  check(load_h100_with(bandwidth, "memory_bandwith: 3.35TB/s"), bandwidth,
        "memory_bandwith: unknown key");
  const int efficiency = h100_line("gemm_efficiency");
  check(load_h100_with(efficiency, "gemm_efficiency: 1.5"), efficiency,
        "gemm_efficiency: expected a fraction in (0, 1]");
  CHECK(load_h100_with(h100_line("sm_count"), "").error.find("sm_count: missing key") !=
        std::string::npos);
  const int fragmentation = h100_line("allocator_fragmentation");
  check(load_h100_with(fragmentation, "allocator_fragmentation: 1"), fragmentation,
        "allocator_fragmentation: expected a fraction in [0, 1)");
  const int reserved = h100_line("reserved_memory");
  check(load_h100_with(reserved, "reserved_memory: -1GiB"), reserved, "reserved_memory: expected");
  const int host = h100_line("host_op_overhead");
  check(load_h100_with(host, "host_op_overhead: 5GB"), host,
        "host_op_overhead: expected a latency");
  check(load_h100_with(host, "host_op_overhead: -5us"), host, "host_op_overhead: expected");
  CHECK(load_h100_with(h100_line("host_op_overhead_no_grad"), "")
            .error.find("host_op_overhead_no_grad: missing key") != std::string::npos);
  const int fp8 = h100_line("fp8_flops");
  check(load_h100_with(fp8, "fp8_flops: -1979TFLOP/s"), fp8, "fp8_flops: expected");
  check(load_h100_with(fp8, "fp8_flops: 1979TB/s"), fp8, "fp8_flops: expected a FLOP rate");
  CHECK(load_h100_with(fp8, "").error.empty());  // optional: without it the device has no fp8

  const std::string error = load_error("tpu-v5p");
  CHECK(error.find("unknown device 'tpu-v5p'") != std::string::npos);
  CHECK(error.find("a100-80gb-sxm, b200, h100-sxm, h200-sxm, h800-sxm") != std::string::npos);
  CHECK(load_error("/nonexistent/device.yaml").find("cannot open device file") !=
        std::string::npos);
}
