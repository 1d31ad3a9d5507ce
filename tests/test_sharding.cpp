// ZeRO/FSDP actions (UNSHARD, RESHARD, REDUCE_GRAD; their text form is in test_action.cpp): their
// placement by the lowering (schedules/sharding.hpp), the validator's rules and the dry run.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <utility>

#include "schedules/dry_run.hpp"
#include "schedules/format.hpp"
#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"
#include "schedules/validate.hpp"

using namespace dtwin::sched;
using Catch::Contains;

namespace {

Layout zero_layout(int dp, int pp, int m, int zero, int v = 1) {
  return Layout{dp, pp, v, m, DpSync::AllReduce, zero};
}

/// The lowered schedule of `kind` on dp × pp with m = 8 microbatches (v = 2 where it takes any).
Schedule lowered(ScheduleKind kind, int dp, int pp, int zero) {
  return lower(generate(kind, zero_layout(dp, pp, 8, zero, requirements(kind).chunks(2))));
}

/// How often rank r runs the stage-level action `kind` of `stage`.
int count(const Schedule& s, int r, int stage, ActionKind kind) {
  return static_cast<int>(std::count(s.ranks[r].begin(), s.ranks[r].end(), Action{stage, kind}));
}

/// Validates the lowered schedule written in `text` for dp 2, pp 1, m 2 and `zero`.
void validate_dp2(const std::string& text, int zero) {
  validate(parse_text(text, "test", zero_layout(2, 1, 2, zero)), Expect::Lowered);
}

/// The same action list on both ranks of dp 2, pp 1.
std::string both_ranks(const std::string& actions) {
  return "rank 0: " + actions + "\nrank 1: " + actions + "\n";
}

}  // namespace

TEST_CASE("every generator lowers and validates at dp 2 for ZeRO 0 to 3") {
  for (const auto& [name, kind] : kScheduleKindNames.entries())
    for (int pp : {2, 4})
      for (int zero = 0; zero <= 3; ++zero) {
        CAPTURE(name, pp, zero);
        const Schedule s = lowered(kind, 2, pp, zero);
        CHECK_NOTHROW(validate(s, Expect::Lowered));
        // The collectives cost nothing in unit time and replicas arrive together.
        CHECK(dry_run(s).step_units == dry_run(generate(kind, s.layout)).step_units);
        for (int r = 0; r < s.layout.group_count(); ++r)
          for (int v = 0; v < s.layout.virtual_stages; ++v) {
            const int stage = s.layout.stage_of(s.layout.pipeline_rank(r), v);
            CAPTURE(r, stage);
            CHECK(count(s, r, stage, ActionKind::OPTIM) == 1);
            CHECK(count(s, r, stage, ActionKind::ALLREDUCE) == (zero == 0 ? 1 : 0));
            CHECK(count(s, r, stage, ActionKind::REDUCE_GRAD) == (zero == 0 ? 0 : 1));
            CHECK(count(s, r, stage, ActionKind::UNSHARD) == (zero == 0 ? 0 : zero < 3 ? 1 : 2));
            CHECK(count(s, r, stage, ActionKind::RESHARD) == (zero == 3 ? 2 : 0));
          }
      }
}

TEST_CASE("ZeRO-3 runs every compute action of a stage while its parameters are gathered") {
  for (const auto& [name, kind] : kScheduleKindNames.entries())
    for (int pp : {2, 4}) {
      const Schedule s = lowered(kind, 2, pp, 3);
      for (int r = 0; r < s.layout.group_count(); ++r) {
        std::map<int, bool> gathered;  // stage -> between UNSHARD and RESHARD
        for (const Action& a : s.ranks[r]) {
          CAPTURE(name, pp, r, to_string(a));
          if (a.kind == ActionKind::UNSHARD) CHECK_FALSE(std::exchange(gathered[a.stage], true));
          if (a.kind == ActionKind::RESHARD) CHECK(std::exchange(gathered[a.stage], false));
          if (is_compute(a.kind)) CHECK(gathered[a.stage]);
          if (a.kind == ActionKind::REDUCE_GRAD || a.kind == ActionKind::OPTIM)
            CHECK_FALSE(gathered[a.stage]);
        }
      }
    }
}

TEST_CASE("placement of the ZeRO actions in 1F1B, dp 2 x pp 2") {
  // Ranks 1 and 3 are the second replica of ranks 0 and 2.
  const auto replicated = [](const std::string& rank0, const std::string& rank2) {
    return "rank 0: " + rank0 + "\nrank 1: " + rank0 + "\nrank 2: " + rank2 + "\nrank 3: " + rank2 +
           "\n";
  };
  SECTION("ZeRO-1 and 2: REDUCE_GRAD where ALLREDUCE was, UNSHARD after OPTIM") {
    for (int zero : {1, 2})
      CHECK(to_text(lower(generate(ScheduleKind::OneFOneB, zero_layout(2, 2, 2, zero)))) ==
            replicated("0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0REDUCE_GRAD 0OPTIM "
                       "0UNSHARD",
                       "1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1REDUCE_GRAD 1OPTIM "
                       "1UNSHARD"));
  }
  SECTION("ZeRO-3: a gather for the forwards, one for the backwards, then REDUCE_GRAD") {
    // On rank 2, 1F1 runs after 1B0 (1F1B's steady state), under the backward's gather.
    CHECK(to_text(lower(generate(ScheduleKind::OneFOneB, zero_layout(2, 2, 2, 3)))) ==
          replicated("0UNSHARD 0F0 0SEND_F0 0F1 0SEND_F1 0RESHARD 0UNSHARD 0RECV_B0 0B0 0RECV_B1 "
                     "0B1 0RESHARD 0REDUCE_GRAD 0OPTIM",
                     "1UNSHARD 1RECV_F0 1F0 1RESHARD 1UNSHARD 1B0 1SEND_B0 1RECV_F1 1F1 1B1 "
                     "1SEND_B1 1RESHARD 1REDUCE_GRAD 1OPTIM"));
  }
}

/// zero_layout with zero 3 and zero3_gather layer.
Layout layer_layout(int dp, int pp, int m, int v = 1) {
  Layout layout = zero_layout(dp, pp, m, 3, v);
  layout.zero3_gather = Zero3Gather::Layer;
  return layout;
}

TEST_CASE("ZeRO-3 per layer: a gather around every pass, a reduction per microbatch") {
  for (const auto& [name, kind] : kScheduleKindNames.entries())
    for (int pp : {2, 4}) {
      CAPTURE(name, pp);
      const int v = requirements(kind).chunks(2);
      const Schedule plain = generate(kind, layer_layout(2, pp, 8, v));
      const Schedule s = lower(plain);
      CHECK_NOTHROW(validate(s, Expect::Lowered));
      CHECK(dry_run(s).step_units == dry_run(plain).step_units);
      for (int r = 0; r < s.layout.group_count(); ++r)
        for (int c = 0; c < v; ++c) {
          const int stage = s.layout.stage_of(s.layout.pipeline_rank(r), c);
          CAPTURE(r, stage);
          const int passes = static_cast<int>(std::count_if(
              s.ranks[r].begin(), s.ranks[r].end(),
              [&](const Action& a) { return a.stage == stage && is_compute(a.kind); }));
          CHECK(count(s, r, stage, ActionKind::UNSHARD) == passes);
          CHECK(count(s, r, stage, ActionKind::RESHARD) == passes);
          CHECK(count(s, r, stage, ActionKind::REDUCE_GRAD) == 8);
        }
    }
}

TEST_CASE("placement of per-layer ZeRO-3 actions in 1F1B, dp 2 x pp 2") {
  const std::string rank0 =
      "0UNSHARD 0F0 0SEND_F0 0RESHARD 0UNSHARD 0F1 0SEND_F1 0RESHARD 0UNSHARD 0RECV_B0 0B0 "
      "0RESHARD 0REDUCE_GRAD 0UNSHARD 0RECV_B1 0B1 0RESHARD 0REDUCE_GRAD 0OPTIM";
  const std::string rank2 =
      "1UNSHARD 1RECV_F0 1F0 1RESHARD 1UNSHARD 1B0 1SEND_B0 1RESHARD 1REDUCE_GRAD 1UNSHARD "
      "1RECV_F1 1F1 1RESHARD 1UNSHARD 1B1 1SEND_B1 1RESHARD 1REDUCE_GRAD 1OPTIM";
  CHECK(to_text(lower(generate(ScheduleKind::OneFOneB, layer_layout(2, 2, 2)))) ==
        "rank 0: " + rank0 + "\nrank 1: " + rank0 + "\nrank 2: " + rank2 + "\nrank 3: " + rank2 +
            "\n");
}

TEST_CASE("the validator holds per-layer ZeRO-3 to a reduction per microbatch") {
  const auto check = [](const std::string& actions) {
    validate(parse_text(both_ranks(actions), "test", layer_layout(2, 1, 2)), Expect::Lowered);
  };
  CHECK_NOTHROW(check(
      "0UNSHARD 0F0 0RESHARD 0UNSHARD 0F1 0RESHARD 0UNSHARD 0B0 0RESHARD 0REDUCE_GRAD 0UNSHARD "
      "0B1 0RESHARD 0REDUCE_GRAD 0OPTIM"));
  CHECK_THROWS_WITH(check("0UNSHARD 0F0 0RESHARD 0UNSHARD 0F1 0RESHARD 0UNSHARD 0B0 0RESHARD "
                          "0UNSHARD 0B1 0RESHARD 0REDUCE_GRAD 0OPTIM"),
                    Contains("has 1 REDUCE_GRAD, expected 2"));
  CHECK_THROWS_WITH(check("0UNSHARD 0F0 0F1 0RESHARD 0UNSHARD 0B0 0RESHARD 0REDUCE_GRAD "
                          "0UNSHARD 0B1 0RESHARD 0REDUCE_GRAD 0OPTIM"),
                    Contains("has 3 UNSHARD, expected 4"));
  CHECK_THROWS_WITH(check("0UNSHARD 0F0 0RESHARD 0UNSHARD 0F1 0RESHARD 0UNSHARD 0B0 0RESHARD "
                          "0UNSHARD 0B1 0RESHARD 0REDUCE_GRAD 0REDUCE_GRAD 0OPTIM"),
                    Contains("no backward between two REDUCE_GRAD"));
}

TEST_CASE("with dp = 1 the ZeRO stage adds nothing") {
  for (const auto& [name, kind] : kScheduleKindNames.entries()) {
    const int v = requirements(kind).chunks(2);
    const std::string plain = to_text(lower(generate(kind, zero_layout(1, 2, 4, 0, v))));
    for (int zero = 1; zero <= 3; ++zero) {
      CAPTURE(name, zero);
      const Schedule s = lower(generate(kind, zero_layout(1, 2, 4, zero, v)));
      CHECK(to_text(s) == plain);
      CHECK_NOTHROW(validate(s, Expect::Lowered));
    }
  }
}

TEST_CASE("ZeRO with a dp_sync other than allreduce, or outside 0..3, is refused") {
  Layout layout = zero_layout(2, 1, 2, 2);
  layout.dp_sync = DpSync::WeightAverage;
  CHECK_THROWS_AS(lower(generate(ScheduleKind::GPipe, layout)), std::invalid_argument);
  CHECK_THROWS_WITH(lower(generate(ScheduleKind::GPipe, zero_layout(2, 1, 2, 4))),
                    Contains("layout.zero 4: expected 0, 1, 2 or 3"));
}

TEST_CASE("the validator rejects misplaced ZeRO actions") {
  SECTION("hand-written schedules that follow the rules pass") {
    CHECK_NOTHROW(validate_dp2(both_ranks("0F0 0F1 0B0 0B1 0REDUCE_GRAD 0OPTIM 0UNSHARD"), 2));
    CHECK_NOTHROW(
        validate_dp2(both_ranks("0UNSHARD 0F0 0F1 0B0 0B1 0RESHARD 0REDUCE_GRAD 0OPTIM"), 3));
  }
  SECTION("REDUCE_GRAD before a backward") {
    CHECK_THROWS_WITH(
        validate_dp2(both_ranks("0F0 0F1 0B0 0REDUCE_GRAD 0B1 0OPTIM 0UNSHARD"), 2),
        Contains("stage 0 on rank 0: REDUCE_GRAD must come after the last backward and before "
                 "OPTIM") &&
            Contains(">0REDUCE_GRAD<"));
  }
  SECTION("an F outside UNSHARD with ZeRO-3") {
    CHECK_THROWS_WITH(
        validate_dp2(both_ranks("0UNSHARD 0F0 0RESHARD 0F1 0UNSHARD 0B0 0B1 0RESHARD "
                                "0REDUCE_GRAD 0OPTIM"),
                     3),
        Contains("0F1 on rank 0 runs while stage 0's parameters are sharded") && Contains(">0F1<"));
  }
  SECTION("ALLREDUCE with ZeRO-2") {
    CHECK_THROWS_WITH(
        validate_dp2(both_ranks("0F0 0F1 0B0 0B1 0ALLREDUCE 0OPTIM 0UNSHARD"), 2),
        Contains("stage 0 on rank 0 has 1 ALLREDUCE, expected 0 (layout.zero 2 reduces "
                 "gradients with REDUCE_GRAD)"));
  }
  SECTION("ZeRO actions with ZeRO-0") {
    CHECK_THROWS_WITH(validate_dp2(both_ranks("0F0 0F1 0B0 0B1 0ALLREDUCE 0OPTIM 0UNSHARD"), 0),
                      Contains("stage 0 on rank 0 has 1 UNSHARD, expected 0 (layout.zero 0)"));
  }
  SECTION("ZeRO-1's UNSHARD before OPTIM") {
    CHECK_THROWS_WITH(validate_dp2(both_ranks("0F0 0F1 0B0 0B1 0REDUCE_GRAD 0UNSHARD 0OPTIM"), 1),
                      Contains("stage 0 on rank 0: UNSHARD must follow OPTIM with layout.zero 1"));
  }
  SECTION("two UNSHARD in a row with ZeRO-3") {
    CHECK_THROWS_WITH(
        validate_dp2(both_ranks("0UNSHARD 0F0 0F1 0UNSHARD 0B0 0B1 0RESHARD 0REDUCE_GRAD 0OPTIM"),
                     3),
        Contains("0UNSHARD on rank 0: stage 0's parameters are already gathered; UNSHARD and "
                 "RESHARD alternate, starting with UNSHARD"));
  }
  SECTION("ZeRO-3 step that ends gathered") {
    CHECK_THROWS_WITH(validate_dp2(both_ranks("0UNSHARD 0F0 0F1 0B0 0B1 0REDUCE_GRAD 0OPTIM"), 3),
                      Contains("stage 0 on rank 0 ends the step with its parameters gathered"));
  }
}

TEST_CASE("the dry run matches the n-th collective of a stage across replicas") {
  // Rank 1 reaches its second UNSHARD at 6 units (two F, two B), rank 0 at 2: rank 0 waits.
  const Schedule s = parse_text(
      "rank 0: 0UNSHARD 0F0 0F1 0UNSHARD\n"
      "rank 1: 0UNSHARD 0F0 0F1 0B0 0B1 0UNSHARD\n",
      "test", zero_layout(2, 1, 2, 3));
  const DryRun run = dry_run(s);
  REQUIRE_FALSE(run.deadlocked);
  CHECK(run.start[0][3] == 6);
  CHECK(run.start[1][5] == 6);
  CHECK(unit_cost(ActionKind::UNSHARD) == 0);
  CHECK(unit_cost(ActionKind::RESHARD) == 0);
  CHECK(unit_cost(ActionKind::REDUCE_GRAD) == 0);
}

TEST_CASE("the schedule JSON names ZeRO-3's gather granularity") {
  CHECK_THAT(to_json(lower(generate(ScheduleKind::OneFOneB, layer_layout(2, 2, 2)))),
             Contains("\"zero3_gather\": \"layer\""));
  CHECK_THAT(to_json(lowered(ScheduleKind::OneFOneB, 2, 2, 3)),
             Contains("\"zero3_gather\": \"stage\""));
  CHECK_THAT(to_json(lowered(ScheduleKind::OneFOneB, 2, 2, 2)), !Contains("zero3_gather"));
}

TEST_CASE(
    "hybrid sharding lowers as ZeRO does, and the validator and the lowering check dp_shard") {
  for (int zero = 1; zero <= 3; ++zero) {
    CAPTURE(zero);
    Layout layout = zero_layout(4, 2, 8, zero);
    layout.dp_shard = 2;
    const Schedule hybrid = lower(generate(ScheduleKind::OneFOneB, layout));
    CHECK_NOTHROW(validate(hybrid, Expect::Lowered));
    CHECK(to_json(hybrid).find("\"dp_shard\": 2") != std::string::npos);
    // The same actions as plain ZeRO over dp 4: the simulator splits REDUCE_GRAD in two.
    const Schedule flat = lower(generate(ScheduleKind::OneFOneB, zero_layout(4, 2, 8, zero)));
    CHECK(hybrid.ranks == flat.ranks);
    CHECK(dry_run(hybrid).step_units == dry_run(flat).step_units);
  }
  Layout uneven = zero_layout(4, 1, 2, 1);
  uneven.dp_shard = 3;
  CHECK_THROWS_WITH(lower(generate(ScheduleKind::OneFOneB, uneven)),
                    Contains("layout.dp_shard 3: expected a divisor of dp 4"));
  Layout unsharded = zero_layout(4, 1, 2, 0);
  unsharded.dp_shard = 2;
  CHECK_THROWS_WITH(lower(generate(ScheduleKind::OneFOneB, unsharded)),
                    Contains("needs layout.zero > 0"));
  Schedule relabelled = lower(generate(ScheduleKind::OneFOneB, zero_layout(4, 1, 2, 0)));
  relabelled.layout.dp_shard = 2;
  CHECK_THROWS_WITH(validate(relabelled, Expect::Lowered), Contains("needs layout.zero > 0"));
}
