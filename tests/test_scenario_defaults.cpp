// Defaults that depend on the device and on other keys (models/spec/scenario_loader.cpp,
// apply_defaults): a GPU scenario without precision or attention trains in bf16 with flash
// attention, a CPU one in fp32 with eager attention; layout.global_batch sets microbatches;
// schedule and inter_node may be left out where they cannot matter; Scenario::defaulted lists
// what was left out.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "models/spec/scenario_loader.hpp"

using namespace dtwin;

namespace {

// A one-node scenario of `device` (YAML lines of cluster.device) with `layout` (YAML lines of
// layout), written to a file of its own; no precision, attention, schedule or inter_node.
std::string write_scenario(const std::string& name, const std::string& device,
                           const std::string& layout) {
  const std::string path = "/tmp/dtwin-defaults-" + name + ".yaml";
  std::ofstream(path) << "name: " << name << R"(
model:
  family: llama
  vocab_size: 4096
  d_model: 288
  n_layers: 6
  n_heads: 6
  ffn_hidden: 768
  seq_len: 256
layout:
)" << layout << R"(
cluster:
  nodes: 1
  devices_per_node: 2
  device:
)" << device << R"(
  intra_node:
    bandwidth: 450GB/s
    latency: 3us
)";
  return path;
}

const std::string kGpu = "    kind: gpu\n    model: h100-sxm";
const std::string kCpu = "    kind: cpu\n    peak_flops: 100GFLOP/s\n    memory: 24GiB";
const std::string kTwoReplicas = "  dp: 2\n  microbatches: 4\n  micro_batch_size: 1";

bool defaulted(const Scenario& s, const std::string& key) {
  return std::find(s.defaulted.begin(), s.defaulted.end(), key) != s.defaulted.end();
}

}  // namespace

TEST_CASE("a GPU device defaults to bf16 and flash attention, a CPU to fp32 and eager") {
  const Scenario gpu = load_scenario(write_scenario("gpu", kGpu, kTwoReplicas));
  CHECK(gpu.training.precision == Precision::Bf16);
  CHECK(gpu.model.attention == Attention::Flash);
  // The peak the description gives is the bf16 one, not fp32's.
  CHECK(gpu.cluster.device.peak_flops == Approx(989e12));
  CHECK(defaulted(gpu, "training.precision"));
  CHECK(defaulted(gpu, "model.attention"));
  const Scenario cpu = load_scenario(write_scenario("cpu", kCpu, kTwoReplicas));
  CHECK(cpu.training.precision == Precision::Fp32);
  CHECK(cpu.model.attention == Attention::Eager);
  // A key the file gives is not a default.
  const Scenario given = load_scenario(write_scenario("gpu", kGpu, kTwoReplicas),
                                       {"training.precision=fp32", "model.attention=eager"});
  CHECK(given.training.precision == Precision::Fp32);
  CHECK(given.model.attention == Attention::Eager);
  CHECK_FALSE(defaulted(given, "training.precision"));
  CHECK_FALSE(defaulted(given, "model.name"));
}

TEST_CASE("schedule and inter_node may be left out where they cannot matter") {
  const Scenario s = load_scenario(write_scenario("one-stage", kGpu, kTwoReplicas));
  CHECK(s.layout.pp == 1);
  CHECK(defaulted(s, "layout.schedule"));
  CHECK(defaulted(s, "cluster.inter_node"));
  // Its link is the intra-node one (no traffic crosses it on one node).
  CHECK(s.cluster.inter_node.bandwidth == Approx(450e9));
  CHECK_FALSE(defaulted(s, "cluster.intra_node"));
  // Keys of a section the file leaves out are not listed one by one.
  CHECK(defaulted(s, "model.moe"));
  CHECK_FALSE(defaulted(s, "model.moe.top_k"));
}

TEST_CASE("layout.global_batch sets microbatches as Megatron-LM's --global-batch-size does") {
  const Scenario s = load_scenario(
      write_scenario("global", kGpu, "  dp: 2\n  global_batch: 24\n  micro_batch_size: 3"));
  CHECK(s.layout.microbatches == 4);  // 24 / (3 · 2)
  CHECK(defaulted(s, "layout.microbatches"));
  // Both given and consistent: accepted.
  CHECK(load_scenario(
            write_scenario("both", kGpu,
                           "  dp: 2\n  global_batch: 8\n  microbatches: 4\n  micro_batch_size: 1"))
            .layout.microbatches == 4);
  // Neither: microbatches is missing.
  CHECK_THROWS_WITH(
      load_scenario(write_scenario("neither", kGpu, "  dp: 2\n  micro_batch_size: 1")),
      Catch::Contains("layout.microbatches: missing key"));
}
