#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "schedules/dry_run.hpp"
#include "schedules/format.hpp"
#include "schedules/generators.hpp"
#include "schedules/validate.hpp"

using namespace dtwin::sched;

namespace {

Layout layout_for(const std::string& name, int pp, int m) {
  Layout layout;
  layout.pp = pp;
  layout.microbatches = m;
  layout.virtual_stages = requirements(*kScheduleKindNames.parse(name)).chunks(2);
  return layout;
}

/// The schedule of the generator that layout.schedule calls `name`.
Schedule generate_named(const std::string& name, const Layout& layout) {
  return generate(*kScheduleKindNames.parse(name), layout);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("generators reproduce the golden schedules") {
  // Golden files: tests/golden/<schedule>_pp<p>_m<m>.txt, the compute-only text form
  // (`dtwin schedule --compute-only`), with v = 2 for interleaved 1F1B, ZB-V and DualPipe-V.
  for (const std::string& name : kScheduleKindNames.names())
    for (auto [pp, m] : {std::pair{2, 4}, {4, 8}, {4, 12}}) {
      const std::string file = std::string(DTWIN_SOURCE_DIR) + "/tests/golden/" + name + "_pp" +
                               std::to_string(pp) + "_m" + std::to_string(m) + ".txt";
      CAPTURE(file);
      const std::string golden = read_file(file);
      REQUIRE_FALSE(golden.empty());
      const Schedule schedule = generate_named(name, layout_for(name, pp, m));
      CHECK(to_text(schedule) == golden);
      CHECK(to_text(parse_text(golden, name, schedule.layout)) == golden);
    }
}

TEST_CASE("unit dry run: step counts of the closed forms") {
  for (auto [pp, m] : {std::pair{2, 4}, {4, 8}, {4, 12}, {3, 4}, {8, 32}}) {
    CAPTURE(pp, m);
    // GPipe and 1F1B: 3(m + pp - 1) units, bubble (pp-1)/(m+pp-1) (Narayanan et al. 2021 eq. 1).
    for (const char* name : {"gpipe", "1f1b"}) {
      const DryRun run = dry_run(generate_named(name, layout_for(name, pp, m)));
      CHECK_FALSE(run.deadlocked);
      CHECK(run.step_units == 3 * (m + pp - 1));
      CHECK(run.bubble_fraction() == Approx(double(pp - 1) / (m + pp - 1)));
    }
    // ZB-H1, ZB-1p, ZB-2p (Qi et al. 2024): a third of 1F1B's bubble, 3m + pp - 1 units, the
    // least a step with a barrier can take: the last rank starts after pp - 1 forwards.
    const DryRun fb = dry_run(generate_named("1f1b", layout_for("1f1b", pp, m)));
    for (const char* name : {"zb-h1", "zb-1p", "zb-2p"}) {
      CAPTURE(name);
      const DryRun zb = dry_run(generate_named(name, layout_for(name, pp, m)));
      CHECK_FALSE(zb.deadlocked);
      CHECK(zb.step_units < fb.step_units);
      CHECK(zb.step_units == 3 * m + pp - 1);
      CHECK(zb.bubble_fraction() == Approx(double(pp - 1) / (3 * m + pp - 1)));
    }
    // ZB-V and DualPipe-V, two chunks per rank: 6m chunk passes per rank and 6m + pp - 1 units,
    // again the least a step with a barrier takes (rank pp-1 starts after pp - 1 chunk forwards):
    // (pp - 1)/2 rank units of bubble, half ZB-H1's. DualPipe-V needs m >= 2pp; ZB-V reaches the
    // bound from m = 2pp - 1 on, where its phases are complete.
    for (const char* name : {"zb-v", "dualpipe-v"}) {
      CAPTURE(name);
      if (m < 2 * pp) continue;
      const DryRun v = dry_run(generate_named(name, layout_for(name, pp, m)));
      CHECK_FALSE(v.deadlocked);
      CHECK(v.step_units == 6 * m + pp - 1);
      CHECK(v.bubble_fraction() == Approx(double(pp - 1) / (6 * m + pp - 1)));
    }
    CHECK(dry_run(generate_named("zb-v", layout_for("zb-v", pp, 2 * pp - 1))).step_units ==
          6 * (2 * pp - 1) + pp - 1);
    // Interleaved 1F1B with v chunks: 3(v*m + pp - 1) chunk units (Narayanan et al. 2021 §2.2.2).
    if (m % pp == 0)
      for (int v : {2, 3}) {
        Layout layout = layout_for("interleaved-1f1b", pp, m);
        layout.virtual_stages = v;
        const DryRun run = dry_run(generate_named("interleaved-1f1b", layout));
        CAPTURE(v);
        CHECK_FALSE(run.deadlocked);
        CHECK(run.step_units == 3 * (v * m + pp - 1));
      }
  }
}

TEST_CASE("generated schedules pass the validator, replicated over dp") {
  for (const std::string& name : kScheduleKindNames.names()) {
    Layout layout = layout_for(name, 4, 8);
    layout.dp = 3;
    const Schedule schedule = generate_named(name, layout);
    CAPTURE(name);
    REQUIRE(schedule.ranks.size() == 12);
    // Pipeline dimension outermost: ranks 0..2 are the three replicas of pipeline rank 0.
    CHECK(schedule.ranks[0] == schedule.ranks[2]);
    CHECK(schedule.ranks[2] != schedule.ranks[3]);
    CHECK_NOTHROW(validate(schedule, Expect::ComputeOnly));
  }
}

namespace {

/// The most microbatches a rank holds activations for: F run, B or W not yet.
int peak_in_flight(const ActionList& actions) {
  int in_flight = 0, peak = 0;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::F) peak = std::max(peak, ++in_flight);
    if (a.kind == ActionKind::B || a.kind == ActionKind::W) --in_flight;
  }
  return peak;
}

/// The forwards a rank runs before its first I.
int warmup_forwards(const ActionList& actions) {
  const auto first_i = std::find_if(actions.begin(), actions.end(),
                                    [](const Action& a) { return a.kind == ActionKind::I; });
  return static_cast<int>(std::count_if(actions.begin(), first_i,
                                        [](const Action& a) { return a.kind == ActionKind::F; }));
}

}  // namespace

TEST_CASE(
    "zero-bubble schedules keep their memory limit: pp in flight (ZB-H1, ZB-1p), 2pp (ZB-2p)") {
  const int pp = 4;
  for (auto [name, limit] : {std::pair{"zb-h1", pp}, {"zb-1p", pp}, {"zb-2p", 2 * pp}}) {
    const Schedule schedule = generate_named(name, layout_for(name, pp, 12));
    CAPTURE(name);
    CHECK(peak_in_flight(schedule.ranks[0]) == limit);
    for (const ActionList& actions : schedule.ranks) CHECK(peak_in_flight(actions) <= limit);
  }
}

TEST_CASE(
    "V schedules hold 1F1B's activations: 2pp chunk microbatches (ZB-V), one more (DualPipe-V)") {
  // A chunk holds half a rank's layers: 2pp chunk microbatches are 1F1B's pp microbatches of the
  // whole rank (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory", §3). DualPipe-V's
  // F&B slot runs the next forward before the backward that frees one: half a microbatch more.
  for (auto [pp, m] : {std::pair{2, 4}, {4, 8}, {4, 12}, {3, 7}}) {
    for (auto [name, limit] : {std::pair{"zb-v", 2 * pp}, {"dualpipe-v", 2 * pp + 1}}) {
      const Schedule schedule = generate_named(name, layout_for(name, pp, m));
      CAPTURE(name, pp, m);
      CHECK(peak_in_flight(schedule.ranks[0]) == limit);
      for (const ActionList& actions : schedule.ranks) CHECK(peak_in_flight(actions) <= limit);
    }
  }
}

TEST_CASE("V placement: rank r runs stages r and 2pp-1-r, the turn and the loss stay put") {
  for (const char* name : {"zb-v", "dualpipe-v"}) {
    const Schedule schedule = generate_named(name, layout_for(name, 4, 8));
    CAPTURE(name);
    CHECK(schedule.layout.placement == StagePlacement::VShape);
    CHECK(schedule.layout.loss_pipeline_rank() == 0);
    for (int r = 0; r < 4; ++r) {
      CHECK(schedule.layout.stage_of(r, 0) == r);
      CHECK(schedule.layout.stage_of(r, 1) == 7 - r);
      for (const Action& a : schedule.ranks[r]) CHECK((a.stage == r || a.stage == 7 - r));
    }
  }
  // ZB-V accepts any microbatch count, as PyTorch does, leaving out the missing ones' actions.
  for (int m = 1; m < 7; ++m) {
    CAPTURE(m);
    const Schedule schedule = generate_named("zb-v", layout_for("zb-v", 4, m));
    CHECK_NOTHROW(validate(schedule, Expect::ComputeOnly));
  }
}

TEST_CASE("ZB-1p and ZB-2p warm up with as many forwards as memory and the first I allow") {
  // Under unit times the first input gradient reaches pipeline rank r after 2(pp - r) - 1
  // forwards' time; ZB-2p fills it all, as ZB-H2 does (Qi et al. 2024 §2.2), ZB-1p up to pp.
  for (auto [pp, m] : {std::pair{4, 12}, {3, 4}, {4, 3}}) {
    for (auto [name, limit] : {std::pair{"zb-1p", pp}, {"zb-2p", 2 * pp}}) {
      const Schedule schedule = generate_named(name, layout_for(name, pp, m));
      for (int r = 0; r < pp; ++r) {
        CAPTURE(name, pp, m, r);
        CHECK(warmup_forwards(schedule.ranks[r]) == std::min({limit, 2 * (pp - r) - 1, m}));
      }
    }
  }
}

TEST_CASE("the zero-bubble heuristic keeps any memory limit under any pass times") {
  for (auto [pp, m] : {std::pair{4, 8}, {3, 7}, {5, 3}})
    for (int limit : {1, 2, pp, 2 * pp})
      for (const PassTimes& times :
           {PassTimes{}, PassTimes{1, 1, 0.5, 0.25}, {1, 2, 1.5, 0}, PassTimes{2, 1, 0.3, 1}}) {
        CAPTURE(pp, m, limit, times.f, times.i, times.w, times.comm);
        const Layout layout = layout_for("zb-1p", pp, m);
        const Schedule schedule =
            replicate_pipeline("zb-1p", layout, zb_greedy(layout, limit, times));
        CHECK_NOTHROW(validate(schedule, Expect::ComputeOnly));
        CHECK_FALSE(dry_run(schedule).deadlocked);
        for (const ActionList& actions : schedule.ranks) CHECK(peak_in_flight(actions) <= limit);
      }
}

TEST_CASE("generate rejects layouts a schedule cannot serve") {
  Layout layout = layout_for("1f1b", 3, 4);
  layout.virtual_stages = 2;
  CHECK_THROWS_WITH(generate_named("1f1b", layout), Catch::Contains("virtual_stages must be 1"));
  layout = layout_for("interleaved-1f1b", 3, 4);
  CHECK_THROWS_WITH(generate_named("interleaved-1f1b", layout), Catch::Contains("multiple of pp"));
  layout = layout_for("zb-v", 2, 4);
  layout.virtual_stages = 1;
  CHECK_THROWS_WITH(generate_named("zb-v", layout), Catch::Contains("virtual_stages must be 2"));
  layout = layout_for("dualpipe-v", 3, 5);
  CHECK_THROWS_WITH(generate_named("dualpipe-v", layout), Catch::Contains("at least 2 * pp"));
  CHECK_FALSE(kScheduleKindNames.parse("pipedream"));
  layout.microbatches = 0;
  CHECK_THROWS_WITH(generate_named("gpipe", layout), Catch::Contains("positive"));
}

TEST_CASE("the scenario loader accepts exactly the schedules that have a generator") {
  for (const auto& [name, kind] : kScheduleKindNames.entries())
    CHECK(generate(kind, layout_for(std::string(name), 2, 4)).name == name);
}
