// The layout search of `dtwin plan` (search_layouts): the zero-bubble schedules it enumerates and
// the memory it holds them to.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "models/cost/cost_model.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "models/cost/schedule_memory.hpp"
#include "models/cost/step_estimate.hpp"
#include "models/spec/scenario_loader.hpp"
#include "plan/alike_layouts.hpp"
#include "plan/layout_search.hpp"

using namespace dtwin;

namespace {

const std::string kLlama = std::string(DTWIN_SOURCE_DIR) + "/scenarios/llama2-7b-1024gpu.yaml";
constexpr double kGiB = 1 << 30;

/// The kept layout with tp, pp, micro-batch size 1 and `schedule`, if any.
std::optional<LayoutCandidate> kept(const LayoutSearch& search, int tp, int pp,
                                    sched::ScheduleKind schedule) {
  for (const LayoutCandidate& c : search.fitting) {
    const LayoutSpec& l = c.scenario.layout;
    if (l.tp == tp && l.pp == pp && l.micro_batch_size == 1 && l.schedule == schedule) return c;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("the planner holds ZB-1p and ZB-2p to the memory of the schedule it simulates",
          "[threads]") {
  using sched::ScheduleKind;
  // LLaMA-2 7B on 8 GPUs of 75 GiB, 16 sequences, eager attention: ZeRO, recompute and sequence
  // parallelism off.
  const Scenario base =
      load_scenario(kLlama, {"cluster.device.memory=75GiB", "model.attention=eager"});
  const PlanRequest request{base, 8, 16, {"zero", "recompute", "sequence_parallel"}, {}};
  const LayoutSearch search = search_layouts(request, [](int, int) {});
  CHECK(search.dropped.at("memory") > 0);
  int zero_bubble = 0;
  for (const LayoutCandidate& c : search.fitting) {
    CHECK(std::ranges::max(c.estimate.peak_bytes) <= 75 * kGiB);
    const ScheduleKind kind = c.scenario.layout.schedule;
    if (kind != ScheduleKind::Zb1p && kind != ScheduleKind::Zb2p) continue;
    // The proxy is ordered by the modelled pass times, as build_schedule orders the schedule
    // that is simulated (unit times understate ZB-2p's peak on tp 4 · pp 2 by 6 GiB).
    ++zero_bubble;
    const CostModel cost(c.scenario);
    const sched::Schedule built = build_schedule(c.scenario);
    for (int r = 0; r < c.scenario.layout.pp; ++r)
      CHECK(c.estimate.peak_bytes[r] ==
            Approx(peak_memory_bytes(built, built.layout.group(0, r), cost)));
  }
  CHECK(zero_bubble > 1);
  // tp 4 · pp 2 (m 16): ZB-2p (up to 4 microbatches in flight) fits, as ZB-1p (2) does, and is
  // estimated as fast.
  const auto zb2p = kept(search, 4, 2, ScheduleKind::Zb2p);
  const auto zb1p = kept(search, 4, 2, ScheduleKind::Zb1p);
  REQUIRE(zb2p);
  REQUIRE(zb1p);
  CHECK(zb2p->estimate.step_s == Approx(zb1p->estimate.step_s));
  CHECK(std::ranges::max(zb2p->estimate.peak_bytes) > std::ranges::max(zb1p->estimate.peak_bytes));
  // tp 2 · pp 4 (m 16): ZB-1p's 4 microbatches fit; ZB-2p's 8 (77.7 GiB) do not and it is dropped.
  CHECK(kept(search, 2, 4, ScheduleKind::Zb1p));
  CHECK_FALSE(kept(search, 2, 4, ScheduleKind::Zb2p));
  const Scenario dropped =
      load_scenario(kLlama, {"cluster.device.memory=75GiB", "model.attention=eager",
                             "cluster.nodes=1", "layout.tp=2", "layout.pp=4", "layout.dp=1",
                             "layout.microbatches=16", "layout.schedule=zb-2p"});
  const StepEstimate estimate = estimate_step(dropped, CostModel(dropped));
  CHECK(std::ranges::max(estimate.peak_bytes) > 75 * kGiB);
}

TEST_CASE("the planner searches the expert-parallel degrees that fold into dp·tp", "[threads]") {
  // Mixtral 8x7B (8 experts) on 8 GPUs, 8 sequences, memory no bound.
  const Scenario base =
      load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/mixtral-8x7b-64gpu.yaml",
                    {"cluster.device.memory=100000GiB"});
  const PlanRequest request{base, 8, 8, {"zero", "recompute", "sequence_parallel", "cp"}, {}};
  const LayoutSearch search = search_layouts(request, [](int, int) {});
  REQUIRE_FALSE(search.fitting.empty());
  // (tp, dp) -> (etp, ep) pairs seen
  std::map<std::pair<int, int>, std::set<std::pair<int, int>>> seen;
  for (const LayoutCandidate& c : search.fitting) {
    const LayoutSpec& l = c.scenario.layout;
    CHECK(8 % l.ep == 0);                                     // ep divides num_experts
    CHECK((l.dp * l.tp / l.expert_tp()) % l.ep == 0);         // and folds into dp·tp / etp
    CHECK((l.expert_tp() == 1 || l.expert_tp() == l.tp));     // etp 1 or tp
    CHECK(c.scenario.training.precision == Precision::Bf16);  // no fp8 with MoE
    seen[{l.tp, l.dp}].insert({l.expert_tp(), l.ep});
  }
  using Pairs = std::set<std::pair<int, int>>;
  // tp 2 · dp 4 (8 GPUs per stage): etp 1 folds ep 1, 2, 4, 8; etp 2 folds ep 1, 2, 4.
  CHECK(seen[{2, 4}] == Pairs{{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 1}, {2, 2}, {2, 4}});
  // tp 2 · dp 2 (pp 2): etp 1 folds ep 1, 2, 4; etp 2 folds ep 1, 2 (never 8).
  CHECK(seen[{2, 2}] == Pairs{{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}});
  // tp 4 · dp 2 (pp 1): etp 1 folds ep 1, 2, 4, 8; etp 4 folds ep 1, 2.
  CHECK(seen[{4, 2}] == Pairs{{1, 1}, {1, 2}, {1, 4}, {1, 8}, {4, 1}, {4, 2}});
  // tp 1 (sequence parallelism kept on) does not load.
  CHECK(seen[{1, 8}].empty());
}

TEST_CASE("the planner offers fp8 only on a device with fp8 tensor cores", "[threads]") {
  const auto precisions = [](const std::vector<std::string>& sets,
                             const std::vector<std::string>& keep) {
    const Scenario base = load_scenario(kLlama, sets);
    const PlanRequest request{base, 8, 16, keep, {}};
    std::set<Precision> seen;
    for (const LayoutCandidate& c : search_layouts(request, [](int, int) {}).fitting)
      seen.insert(c.scenario.training.precision);
    return seen;
  };
  const std::vector<std::string> keep = {"zero", "recompute", "sequence_parallel", "cp"};
  // LLaMA-2 7B on A100s (no fp8_flops): bf16 only.
  CHECK(precisions({}, keep) == std::set<Precision>{Precision::Bf16});
  // On H100s: bf16 and fp8, unless the precision is kept.
  CHECK(precisions({"cluster.device.model=h100-sxm"}, keep) ==
        std::set<Precision>{Precision::Bf16, Precision::Fp8});
  std::vector<std::string> keep_precision = keep;
  keep_precision.push_back("precision");
  CHECK(precisions({"cluster.device.model=h100-sxm"}, keep_precision) ==
        std::set<Precision>{Precision::Bf16});
}

TEST_CASE("the planner searches context parallelism for flash attention over long sequences",
          "[threads]") {
  const auto searched = [](const std::vector<std::string>& sets) {
    const Scenario base = load_scenario(kLlama, sets);
    const PlanRequest request{base, 8, 8, {"zero", "recompute", "sequence_parallel"}, {}};
    std::set<int> cps;
    for (const LayoutCandidate& c : search_layouts(request, [](int, int) {}).fitting) {
      const LayoutSpec& l = c.scenario.layout;
      CHECK(l.dp * l.cp * l.pp * l.tp == 8);
      CHECK(l.dp * l.micro_batch_size * l.microbatches == 8);  // the global batch, not dp·cp
      CHECK(c.scenario.model.seq_len % (2 * l.cp) == 0);
      cps.insert(l.cp);
    }
    return cps;
  };
  const std::vector<std::string> roomy = {"cluster.device.memory=100000GiB",
                                          "model.attention=flash"};
  // 16K tokens: chunks of at least 1024 tokens allow cp up to 8 on 8 GPUs
  std::vector<std::string> long_context = roomy;
  long_context.push_back("model.seq_len=16384");
  CHECK(searched(long_context) == std::set<int>{1, 2, 4, 8});
  // 4K tokens: 2·cp chunks of 1024 stop at cp 2
  std::vector<std::string> short_context = roomy;
  short_context.push_back("model.seq_len=4096");
  CHECK(searched(short_context) == std::set<int>{1, 2});
  // eager attention: no context parallelism
  std::vector<std::string> eager = long_context;
  eager.push_back("model.attention=eager");
  CHECK(searched(eager) == std::set<int>{1});
}

TEST_CASE("the planner offers hybrid sharding over one node for dense models under ZeRO",
          "[threads]") {
  // LLaMA-2 7B on 16 GPUs of 8-GPU nodes, 16 sequences
  const Scenario base =
      load_scenario(kLlama, {"cluster.device.memory=100000GiB", "cluster.devices_per_node=8"});
  const PlanRequest request{base, 16, 16, {"recompute", "sequence_parallel", "cp"}, {}};
  int hybrid = 0;
  for (const LayoutCandidate& c : search_layouts(request, [](int, int) {}).fitting) {
    const LayoutSpec& l = c.scenario.layout;
    if (!l.hybrid_shard()) continue;
    ++hybrid;
    CHECK(l.zero > 0);
    CHECK(l.dp_shard * l.cp * l.tp == 8);  // one node's GPUs per shard group
    CHECK(l.dp % l.dp_shard == 0);
  }
  CHECK(hybrid > 0);
  const PlanRequest kept{base, 16, 16, {"recompute", "sequence_parallel", "cp", "dp_shard"}, {}};
  for (const LayoutCandidate& c : search_layouts(kept, [](int, int) {}).fitting)
    CHECK_FALSE(c.scenario.layout.hybrid_shard());
}

TEST_CASE("the planner groups dp, cp and micro-batch splits that give every rank the same work") {
  const std::string long_context =
      std::string(DTWIN_SOURCE_DIR) + "/scenarios/llama3-70b-128k-cp.yaml";
  // The same estimate for each (alike compares estimates; here only the settings decide).
  const auto candidate = [&](int dp, int cp, int mbs, int microbatches) {
    LayoutCandidate c;
    c.scenario =
        load_scenario(long_context, {"layout.tp=2", "layout.pp=1", "layout.schedule=1f1b",
                                     "layout.virtual_stages=1", "layout.dp=" + std::to_string(dp),
                                     "layout.cp=" + std::to_string(cp), "layout.zero=3",
                                     "layout.micro_batch_size=" + std::to_string(mbs),
                                     "layout.microbatches=" + std::to_string(microbatches)});
    c.estimate.step_s = 10.0;
    c.estimate.peak_bytes = {60 * kGiB};
    return c;
  };
  const LayoutCandidate base = candidate(8, 32, 1, 2);
  // dp·cp 256 and 4,096 tokens per rank per microbatch (128k / 32 · 1 = 128k / 64 · 2).
  CHECK(alike(base, candidate(4, 64, 2, 2)));
  CHECK(alike(base, candidate(2, 128, 4, 2)));
  // Half the tokens per rank: another balance of compute and communication.
  CHECK_FALSE(alike(base, candidate(4, 64, 1, 4)));
  // The same split with another microbatch count is another pipeline: not alike.
  CHECK_FALSE(alike(base, candidate(4, 64, 2, 1)));
  // Alike settings, estimates apart by more than kAlikeTolerance: not alike.
  LayoutCandidate slower = candidate(4, 64, 2, 2);
  slower.estimate.step_s *= 1 + 2 * kAlikeTolerance;
  CHECK_FALSE(alike(base, slower));
  const std::vector<const LayoutCandidate*> ranked = {&base, &slower};
  CHECK(group_alike(ranked) == std::vector<int>{1, 2});
}
