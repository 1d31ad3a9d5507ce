// Tests of models/: units, the scenario loader, --set overrides and the malformed-scenario
// corpus in tests/scenarios/bad/ (each file's first line: "# expect: <message part> @ <line>").
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/closest_name.hpp"
#include "models/spec/scenario_loader.hpp"
#include "models/spec/units.hpp"
#include "tests/bad_corpus.hpp"

using dtwin::ConfigError;
using dtwin::load_scenario;
using dtwin::parse_quantity;
using dtwin::Quantity;

namespace {

const std::string kSourceDir = DTWIN_SOURCE_DIR;
const std::string kQuickstart = kSourceDir + "/scenarios/quickstart.yaml";

/// The message load_scenario throws, or "" if it loads.
std::string load_error(const std::string& path, const std::vector<std::string>& overrides = {}) {
  try {
    load_scenario(path, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

TEST_CASE("quickstart scenario loads with its values in base units", "[scenario]") {
  const dtwin::Scenario s = load_scenario(kQuickstart);
  CHECK(s.source == kQuickstart);
  CHECK(s.name == "quickstart");
  CHECK(s.model.family == dtwin::ModelFamily::Llama);
  CHECK(s.model.vocab_size == 4096);
  CHECK(s.model.d_model == 288);
  CHECK(s.model.n_layers == 6);
  CHECK(s.model.n_heads == 6);
  CHECK(s.model.ffn_hidden == 768);
  CHECK(s.model.seq_len == 256);
  CHECK(s.layout.dp == 1);
  CHECK(s.layout.pp == 3);
  CHECK(s.layout.tp == 1);
  CHECK(s.layout.schedule == dtwin::sched::ScheduleKind::OneFOneB);
  CHECK(s.layout.microbatches == 4);
  CHECK(s.layout.micro_batch_size == 1);
  CHECK(s.layout.virtual_stages == 1);
  CHECK(s.layout.dp_sync == dtwin::sched::DpSync::AllReduce);
  CHECK(s.layout.stage_layers.empty());
  CHECK(s.world_size() == 3);
  CHECK(s.training.steps == 150);
  CHECK(s.training.lr == Approx(3e-3));
  CHECK(s.training.optimizer == "adamw");
  CHECK(s.training.seed == 1234);
  CHECK(s.training.precision == dtwin::Precision::Fp32);
  CHECK(s.training.checkpoint_every == 0);
  CHECK(s.cluster.nodes == 1);
  CHECK(s.cluster.devices_per_node == 1);
  CHECK(s.cluster.ranks_per_device == 3);
  CHECK(s.cluster.device.kind == dtwin::DeviceKind::Cpu);
  CHECK(s.cluster.device.peak_flops == Approx(2e11));
  CHECK(s.cluster.device.efficiency == Approx(0.5));
  CHECK(s.cluster.device.memory == 24.0 * (1ULL << 30));
  CHECK(s.cluster.device.cores == 2);
  CHECK(s.cluster.device.profile.empty());
  CHECK(s.cluster.intra_node.bandwidth == Approx(5e9));
  CHECK(s.cluster.intra_node.latency == Approx(20e-6));
  CHECK(s.cluster.inter_node.bandwidth == Approx(1.25e9));
  CHECK(s.cluster.inter_node.latency == Approx(50e-6));
  CHECK(s.cluster.topology == dtwin::Topology::Star);
  CHECK(s.runtime.backend == dtwin::Backend::Gloo);
  CHECK(s.runtime.device == dtwin::RuntimeDevice::Cpu);
  CHECK(s.runtime.timeout_s == Approx(60));
}

TEST_CASE("model.family accepts llama, gpt2, bert and distilbert", "[scenario]") {
  CHECK(load_scenario(kQuickstart, {"model.family=gpt2"}).model.family == dtwin::ModelFamily::Gpt2);
  CHECK(load_scenario(kQuickstart, {"model.family=distilbert"}).model.family ==
        dtwin::ModelFamily::DistilBert);
  CHECK(starts_with(load_error(kQuickstart, {"model.family=roberta"}),
                    "--set model.family=roberta: model.family: expected one of llama, gpt2, bert, "
                    "distilbert, got 'roberta'"));
  SECTION("only llama's rotary embeddings need an even head size") {
    // d_model 30 over 6 heads: head size 5
    const std::vector<std::string> odd = {"model.d_model=30"};
    CHECK(starts_with(load_error(kQuickstart, odd),
                      "--set model.d_model=30: model.d_model: expected model.d_model / "
                      "model.n_heads (30 / 6 = 5) to be even for rotary embeddings"));
    auto gpt2 = odd;
    gpt2.push_back("model.family=gpt2");
    CHECK(load_scenario(kQuickstart, gpt2).model.d_model == 30);
    gpt2.push_back("model.d_model=31");  // still a multiple of n_heads for both families
    CHECK(starts_with(load_error(kQuickstart, gpt2),
                      "--set model.d_model=31: model.d_model: expected model.d_model (31) to be "
                      "a multiple of model.n_heads (6)"));
  }
}

TEST_CASE("3D-parallel, ZeRO, recomputation, overlap and offload keys load through --set",
          "[scenario]") {
  const auto s = load_scenario(
      kQuickstart, {"layout.tp=2", "layout.dp=2", "layout.pp=1", "cluster.ranks_per_device=4",
                    "layout.sequence_parallel=true", "layout.tp_comm_overlap=true", "layout.zero=3",
                    "layout.zero3_gather=stage", "layout.recompute=selective",
                    "layout.overlap_grad_reduce=true", "layout.bucket_size=25MB",
                    "layout.overlap_param_gather=true", "layout.offload=optimizer+params",
                    "cluster.device.host_link={bandwidth: 32GB/s, latency: 2us}",
                    "model.attention=flash", "cluster.device.model=h100-sxm"});
  CHECK(s.layout.tp == 2);
  CHECK(s.world_size() == 4);
  CHECK(s.layout.sequence_parallel);
  CHECK(s.layout.tp_comm_overlap);
  CHECK(s.layout.zero == 3);
  CHECK(s.layout.zero3_gather == dtwin::sched::Zero3Gather::Stage);
  CHECK(s.layout.recompute == dtwin::Recompute::Selective);
  CHECK(s.layout.overlap_grad_reduce);
  CHECK(s.layout.bucket_size == Approx(25e6));
  CHECK(s.layout.overlap_param_gather);
  CHECK(s.layout.offload == dtwin::Offload::OptimizerParams);
  CHECK(s.cluster.device.host_link.bandwidth == Approx(32e9));
  CHECK(s.cluster.device.host_link.latency == Approx(2e-6));
  CHECK(s.model.attention == dtwin::Attention::Flash);
  CHECK(s.cluster.device.model == "h100-sxm");
  // Defaults: the layouts of the earlier scenarios.
  const auto plain = load_scenario(kQuickstart);
  CHECK(plain.layout.zero == 0);
  CHECK(plain.layout.zero3_gather == dtwin::sched::Zero3Gather::Layer);
  CHECK(plain.layout.recompute == dtwin::Recompute::None);
  CHECK(plain.model.attention == dtwin::Attention::Eager);
  CHECK_FALSE(plain.layout.sequence_parallel);
  CHECK_FALSE(plain.layout.tp_comm_overlap);
}

TEST_CASE("layout.schedule accepts the schedule kinds' names", "[scenario]") {
  CHECK(dtwin::sched::kScheduleKindNames.names() ==
        std::vector<std::string>{"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-1p", "zb-2p",
                                 "zb-v", "dualpipe-v"});
}

TEST_CASE("overrides given with --set replace, add and are checked like file values",
          "[scenario]") {
  SECTION("a value is replaced") {
    CHECK(load_scenario(kQuickstart, {"layout.microbatches=8"}).layout.microbatches == 8);
  }
  SECTION("the last override of a key wins") {
    const auto s = load_scenario(kQuickstart, {"layout.microbatches=8", "layout.microbatches=2"});
    CHECK(s.layout.microbatches == 2);
  }
  SECTION("units, flow sequences and new keys") {
    const auto s = load_scenario(
        kQuickstart, {"cluster.inter_node.bandwidth=200Gb/s", "layout.stage_layers=[1, 2, 3]",
                      "layout.dp_sync=weight-average"});
    CHECK(s.cluster.inter_node.bandwidth == Approx(25e9));
    CHECK(s.layout.stage_layers == std::vector<int>{1, 2, 3});
    CHECK(s.layout.dp_sync == dtwin::sched::DpSync::WeightAverage);
  }
  SECTION("a bad value is reported at the override") {
    const std::string msg = load_error(kQuickstart, {"layout.pp=x"});
    CHECK(starts_with(msg, "--set layout.pp=x: layout.pp: expected a positive integer, got 'x'"));
  }
  SECTION("a cross-field rule broken by an override blames the override") {
    const std::string msg = load_error(kQuickstart, {"layout.pp=2"});
    CHECK(starts_with(msg, "--set layout.pp=2: layout.pp: expected dp*cp*pp*tp = 2 ranks"));
  }
  SECTION("an unknown key given by an override") {
    CHECK(starts_with(load_error(kQuickstart, {"layout.foo=1"}),
                      "--set layout.foo=1: layout.foo: unknown key"));
  }
  SECTION("a map created by an override is checked") {
    CHECK(starts_with(load_error(kQuickstart, {"cluster.device={}"}),
                      "--set cluster.device={}: cluster.device.peak_flops: missing key"));
  }
  SECTION("malformed overrides") {
    for (const std::string bad : {"layout.pp", "=3", "layout..pp=3", ".pp=3"}) {
      INFO(bad);
      CHECK(starts_with(load_error(kQuickstart, {bad}), "--set " + bad + ": expected key.path"));
    }
    CHECK(starts_with(load_error(kQuickstart, {"layout.stage_layers=[1, 2"}),
                      "--set layout.stage_layers=[1, 2: layout.stage_layers: expected a YAML"));
    CHECK(starts_with(load_error(kQuickstart, {"name.first=x"}),
                      "--set name.first=x: name: expected a map"));
  }
}

TEST_CASE("a missing file is reported", "[scenario]") {
  const std::string path = kSourceDir + "/tests/scenarios/no-such-file.yaml";
  CHECK(load_error(path) == path + ": cannot open scenario file");
}

TEST_CASE("parse_quantity accepts numbers with units", "[units]") {
  struct Case {
    const char* text;
    Quantity kind;
    double value;
  };
  const double ki = 1024;
  const Case cases[] = {
      {"1e9", Quantity::Bandwidth, 1e9},
      {"25GB/s", Quantity::Bandwidth, 25e9},
      {"25 GB/s", Quantity::Bandwidth, 25e9},
      {"200Gb/s", Quantity::Bandwidth, 25e9},
      {"200Gbps", Quantity::Bandwidth, 25e9},
      {"100Mbps", Quantity::Bandwidth, 12.5e6},
      {"1Tb/s", Quantity::Bandwidth, 125e9},
      {"3KB/s", Quantity::Bandwidth, 3e3},
      {"2MiB/s", Quantity::Bandwidth, 2 * ki * ki},
      {"1GiB/s", Quantity::Bandwidth, ki * ki * ki},
      {"10B/s", Quantity::Bandwidth, 10},
      {"1.5TB/s", Quantity::Bandwidth, 1.5e12},
      {"300", Quantity::Latency, 300},
      {"20us", Quantity::Latency, 20e-6},
      {"1.5ms", Quantity::Latency, 1.5e-3},
      {"2s", Quantity::Latency, 2},
      {"100ns", Quantity::Latency, 100e-9},
      {"0", Quantity::Latency, 0},
      {"24GiB", Quantity::Bytes, 24 * ki * ki * ki},
      {"512MB", Quantity::Bytes, 512e6},
      {"1KiB", Quantity::Bytes, ki},
      {"1TiB", Quantity::Bytes, ki * ki * ki * ki},
      {"4096", Quantity::Bytes, 4096},
      {"100GFLOP/s", Quantity::FlopRate, 1e11},
      {"1e12", Quantity::FlopRate, 1e12},
      {"312TFLOP/s", Quantity::FlopRate, 312e12},
      {"1PFLOP/s", Quantity::FlopRate, 1e15},
      {"5MFLOP/s", Quantity::FlopRate, 5e6},
      {"7FLOP/s", Quantity::FlopRate, 7},
      {"1e-3", Quantity::Count, 1e-3},
      {"-2.5", Quantity::Count, -2.5},
      {" 3 ", Quantity::Count, 3},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(parse_quantity(c.text, c.kind) == Approx(c.value));
  }
}

TEST_CASE("parse_quantity rejects what is not a quantity of its kind", "[units]") {
  struct Case {
    const char* text;
    Quantity kind;
  };
  const Case cases[] = {
      {"", Quantity::Bandwidth},
      {"GB/s", Quantity::Bandwidth},
      {"25 parsecs", Quantity::Bandwidth},
      {"25gb/s", Quantity::Bandwidth},
      {"25GB", Quantity::Bandwidth},
      {"25GB/s x", Quantity::Bandwidth},
      {"nan", Quantity::Bandwidth},
      {"inf", Quantity::Bandwidth},
      {"1e999", Quantity::Bandwidth},
      {"25 GB / s", Quantity::Bandwidth},
      {"20 us5", Quantity::Latency},
      {"20h", Quantity::Latency},
      {"20GB", Quantity::Latency},
      {"24Gi", Quantity::Bytes},
      {"24GiB/s", Quantity::Bytes},
      {"100GFLOPS", Quantity::FlopRate},
      {"100 TFLOPs", Quantity::FlopRate},
      {"3x", Quantity::Count},
      {"5GB/s", Quantity::Count},
      {"0x10", Quantity::Count},
      {"1,5", Quantity::Count},
      {"--1", Quantity::Count},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_AS(parse_quantity(c.text, c.kind), dtwin::UserError);
  }
  CHECK_THROWS_WITH(parse_quantity("25 parsecs", Quantity::Bandwidth),
                    "expected a bandwidth such as 25GB/s or 200Gb/s");
}

TEST_CASE("every malformed scenario fails at the expected line", "[scenario]") {
  const auto corpus = dtwin::test::bad_scenarios();
  CHECK(corpus.size() >= 20);
  for (const auto& bad : corpus) {
    INFO(bad.path);
    REQUIRE_FALSE(bad.line.empty());
    const std::string msg = load_error(bad.path);
    INFO("  message: " << msg);
    CHECK(msg.find(bad.path + ":" + bad.line + ":") != std::string::npos);
    CHECK(msg.find(bad.expected) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("a plain number implausible for its kind asks for a unit", "[units]") {
  using dtwin::implausible_without_unit;
  CHECK(implausible_without_unit("300", Quantity::Bandwidth).find("300GB/s") != std::string::npos);
  CHECK(implausible_without_unit("300B/s", Quantity::Bandwidth).empty());  // the unit is given
  CHECK(implausible_without_unit("1e9", Quantity::Bandwidth).empty());     // 1 GB/s
  CHECK(implausible_without_unit("2", Quantity::Latency).find("2us") != std::string::npos);
  CHECK(implausible_without_unit("0.5", Quantity::Latency).empty());
  CHECK(implausible_without_unit("0", Quantity::Bytes).empty());  // 0: "the default" for sizes
  CHECK(implausible_without_unit("24", Quantity::Bytes).find("24GiB") != std::string::npos);
  CHECK(implausible_without_unit("1e8", Quantity::FlopRate).find("TFLOP/s") != std::string::npos);
  CHECK(implausible_without_unit("7", Quantity::Count).empty());
}

TEST_CASE("closest_name suggests the nearest name within a third of the word's letters") {
  const std::vector<std::string> names{"microbatches", "micro_batch_size", "schedule", "simulate"};
  CHECK(dtwin::closest_name("mircobatches", names) == "microbatches");  // a swap
  CHECK(dtwin::closest_name("simulat", names) == "simulate");           // a deletion
  CHECK_FALSE(dtwin::closest_name("frobnicate", names));                // nothing near
  CHECK_FALSE(dtwin::closest_name("schedule", names));                  // no misspelling
}
