// Tests of host-bound execution: the issue queue (models/cost/host_queue), the framework operator
// counts (models/cost/host_ops, against bench/host_dispatch.py) and the stall they add to a
// stage's passes (models/cost/layer_host_stall, models/cost/cost_model).
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/cost/cost_model.hpp"
#include "models/cost/host_ops.hpp"
#include "models/cost/host_queue.hpp"
#include "models/cost/layer_host_stall.hpp"
#include "models/cost/layer_ops.hpp"
#include "models/spec/device_description.hpp"
#include "models/spec/scenario_loader.hpp"

using dtwin::Issue;
using dtwin::queued_seconds;

TEST_CASE("a queue of kernels shorter than their issue takes the host's time") {
  // 10 kernels of 1 µs, each issued after 4 µs: the last is issued at 40 µs and ends at 41 µs.
  const std::vector<Issue> issues(10, Issue{4e-6, 1e-6});
  CHECK(queued_seconds(issues) == Approx(41e-6));
  CHECK(dtwin::host_stall_seconds(issues) == Approx(31e-6));
  // Repeated 3 times (3 layers): 120 µs of issuing, then the last kernel.
  CHECK(queued_seconds(issues, 3) == Approx(121e-6));
}

TEST_CASE("a queue of kernels longer than their issue takes the device's time after the first") {
  const std::vector<Issue> issues(10, Issue{4e-6, 50e-6});
  CHECK(queued_seconds(issues) == Approx(4e-6 + 500e-6));
  CHECK(dtwin::host_stall_seconds(issues, 2) == Approx(4e-6));
}

TEST_CASE("a long kernel lets the host run ahead over the short ones behind it") {
  // GEMM of 100 µs issued at 5 µs; 20 short kernels issued at 5 µs each meanwhile (100 µs of
  // issuing, done at 105 µs) run back to back after it: the pass ends at 105 + 20 µs.
  std::vector<Issue> issues{{5e-6, 100e-6}};
  issues.insert(issues.end(), 20, Issue{5e-6, 1e-6});
  CHECK(queued_seconds(issues) == Approx(125e-6));
  // Between max(host, device) = 120 µs... and host + device = 225 µs.
  CHECK(queued_seconds(issues) >= 120e-6);
}

TEST_CASE("the framework operator counts are those bench/host_dispatch.py dispatches") {
  const std::string command =
      std::string(DTWIN_PYTHON) + " " + DTWIN_SOURCE_DIR + "/bench/host_dispatch.py --json";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    out.append(buffer.data(), n);
  REQUIRE(pclose(pipe) == 0);
  const nlohmann::json counts = nlohmann::json::parse(out);
  const std::vector<std::tuple<std::string, dtwin::ModelFamily, dtwin::Attention>> layers = {
      {"gpt2-eager", dtwin::ModelFamily::Gpt2, dtwin::Attention::Eager},
      {"gpt2-flash", dtwin::ModelFamily::Gpt2, dtwin::Attention::Flash},
      {"llama-flash", dtwin::ModelFamily::Llama, dtwin::Attention::Flash},
      {"llama-eager", dtwin::ModelFamily::Llama, dtwin::Attention::Eager}};
  for (const auto& [key, family, attention] : layers) {
    REQUIRE(counts.contains(key));
    for (const auto& [name, ops] : counts.at(key).items()) {
      INFO(key << " " << name);
      const dtwin::HostOps host = dtwin::layer_host_ops(family, attention, name);
      CHECK(host.forward == ops.at(0).get<int>());
      CHECK(host.forward_no_grad == ops.at(1).get<int>());
      CHECK(host.backward == ops.at(2).get<int>());
    }
  }
  CHECK_THROWS_AS(
      dtwin::layer_host_ops(dtwin::ModelFamily::Gpt2, dtwin::Attention::Eager, "rotary"),
      std::logic_error);
}

namespace {

/// A GPT-2-style scenario on one A100 node (the shipped description), small enough that the
/// host bounds it at micro-batch 1 and tp 8, or large enough that it does not.
dtwin::Scenario gpt2_scenario(int d_model, int tp, int micro_batch, int layers) {
  const std::string yaml = R"(
name: host-bound
model: {family: gpt2, vocab_size: 51200, d_model: )" +
                           std::to_string(d_model) + R"(, n_layers: )" + std::to_string(layers) +
                           R"(, n_heads: 16, ffn_hidden: )" + std::to_string(4 * d_model) +
                           R"(, seq_len: 1024, attention: eager}
layout: {dp: )" + std::to_string(8 / tp) +
                           R"(, pp: 1, tp: )" + std::to_string(tp) +
                           R"(, schedule: 1f1b, microbatches: 4, micro_batch_size: )" +
                           std::to_string(micro_batch) + R"(, recompute: full}
training: {steps: 1, precision: bf16}
cluster:
  nodes: 1
  devices_per_node: 8
  device: {kind: gpu, model: a100-80gb-sxm}
  intra_node: {bandwidth: 300GB/s, latency: 3us}
  inter_node: {bandwidth: 200GB/s, latency: 5us}
)";
  const std::string path = "host-bound-" + std::to_string(d_model) + "-" + std::to_string(tp) +
                           "-" + std::to_string(micro_batch) + ".yaml";
  std::ofstream(path) << yaml;
  return dtwin::load_scenario(path);
}

}  // namespace

TEST_CASE("a small layer's passes take at least the host's time to issue them") {
  const dtwin::Scenario scenario = gpt2_scenario(1024, 8, 1, 4);
  const dtwin::DeviceDescription& device = *scenario.cluster.device.description;
  REQUIRE(device.host_op_overhead > 0);
  const dtwin::CostModel cost(scenario);
  const dtwin::KernelSeconds& k = *cost.stage(0).kernel;
  // Host seconds per layer: the forward under no_grad (full recomputation), the recomputed
  // forward and the backward with autograd, plus one operator per collective (2 in F, 4 in B).
  double no_grad = 0, grad = 0, backward = 0;
  const auto& l = scenario.layout;
  for (const dtwin::Op& op :
       dtwin::layer_ops(scenario.model, l, dtwin::Precision::Bf16, dtwin::Pass::Forward)) {
    no_grad += op.host_ops_no_grad * device.host_op_overhead_no_grad;
    grad += op.host_ops * device.host_op_overhead;
  }
  for (const auto pass : {dtwin::Pass::InputBackward, dtwin::Pass::WeightBackward})
    for (const dtwin::Op& op : dtwin::layer_ops(scenario.model, l, dtwin::Precision::Bf16, pass))
      backward += op.host_ops * device.host_op_overhead;
  const double collective = device.host_op_overhead;
  CHECK(k.forward >= 4 * (no_grad + 2 * collective));
  CHECK(k.backward >= 4 * (grad + backward + 4 * collective));
  // ...and the device's work does not hide it: the host is at least half of B.
  CHECK(4 * (grad + backward) > 0.5 * k.backward);
}

TEST_CASE("a large layer's passes are the device's: the host runs ahead") {
  const dtwin::Scenario scenario = gpt2_scenario(8192, 1, 4, 2);
  const dtwin::DeviceDescription& device = *scenario.cluster.device.description;
  const dtwin::HostStall stall =
      dtwin::layer_host_stall(device, scenario, 2, /*tp_collective_s=*/0);
  const dtwin::CostModel cost(scenario);
  const dtwin::KernelSeconds& k = *cost.stage(0).kernel;
  CHECK(stall.forward < 0.002 * k.forward);
  CHECK(stall.backward < 0.002 * k.backward);
  CHECK(k.backward <= k.input_backward + k.weight_backward);
}
