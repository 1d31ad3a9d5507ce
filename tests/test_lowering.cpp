#include <catch2/catch.hpp>

#include "schedules/dry_run.hpp"
#include "schedules/format.hpp"
#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"
#include "schedules/validate.hpp"

using namespace dtwin::sched;

namespace {

Layout make_layout(int dp, int pp, int m, int v = 1, DpSync sync = DpSync::AllReduce) {
  return Layout{dp, pp, v, m, sync};
}

/// The schedule of the generator that layout.schedule calls `name`.
Schedule generate_named(const std::string& name, const Layout& layout) {
  return generate(*kScheduleKindNames.parse(name), layout);
}

}  // namespace

TEST_CASE("lowering 1F1B adds sends after producers, receives before consumers, and OPTIM") {
  const Schedule lowered = lower(generate_named("1f1b", make_layout(1, 2, 2)));
  CHECK(to_text(lowered) ==
        "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0OPTIM\n"
        "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1OPTIM\n");
  CHECK_NOTHROW(validate(lowered, Expect::Lowered));
}

TEST_CASE("DP sync placement follows dp_sync") {
  SECTION("allreduce: after the stage's last backward and its send, before OPTIM") {
    const Schedule lowered = lower(generate_named("1f1b", make_layout(2, 2, 2)));
    CHECK(to_text(lowered) ==
          "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0ALLREDUCE 0OPTIM\n"
          "rank 1: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0ALLREDUCE 0OPTIM\n"
          "rank 2: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1ALLREDUCE 1OPTIM\n"
          "rank 3: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1ALLREDUCE 1OPTIM\n");
  }
  SECTION("weight-average: parameters are averaged after OPTIM") {
    const Schedule lowered =
        lower(generate_named("gpipe", make_layout(2, 1, 2, 1, DpSync::WeightAverage)));
    CHECK(to_text(lowered) ==
          "rank 0: 0F0 0F1 0B0 0B1 0OPTIM 0ALLREDUCE\n"
          "rank 1: 0F0 0F1 0B0 0B1 0OPTIM 0ALLREDUCE\n");
    CHECK_NOTHROW(validate(lowered, Expect::Lowered));
  }
  SECTION("interleaved: each chunk syncs right after its own last backward") {
    const Schedule lowered = lower(generate_named("interleaved-1f1b", make_layout(2, 2, 2, 2)));
    CHECK_NOTHROW(validate(lowered, Expect::Lowered));
    const ActionList& rank0 = lowered.ranks[0];
    auto pos = [&](Action a) { return std::find(rank0.begin(), rank0.end(), a) - rank0.begin(); };
    // Stage 2 (chunk 1) finishes its backwards before stage 0: its sync overlaps stage 0's work.
    CHECK(pos({2, ActionKind::ALLREDUCE}) < pos({0, ActionKind::B, 1}));
    CHECK(pos({2, ActionKind::ALLREDUCE}) == pos({2, ActionKind::SEND_B, 1}) + 1);
  }
}

TEST_CASE("stages sharing a rank exchange nothing") {
  const Schedule lowered = lower(generate_named("interleaved-1f1b", make_layout(1, 1, 2, 3)));
  for (const Action& a : lowered.ranks[0]) CHECK_FALSE(is_p2p(a.kind));
  CHECK_NOTHROW(validate(lowered, Expect::Lowered));
}

TEST_CASE("lowering keeps every generator's unit-time step count and validates") {
  for (const std::string& name : kScheduleKindNames.names())
    for (int dp : {1, 2}) {
      const Layout layout =
          make_layout(dp, 4, 8, requirements(*kScheduleKindNames.parse(name)).chunks(2));
      const Schedule compute = generate_named(name, layout);
      const Schedule lowered = lower(compute);
      CAPTURE(name, dp);
      CHECK_NOTHROW(validate(lowered, Expect::Lowered));
      CHECK(dry_run(lowered).step_units == dry_run(compute).step_units);
    }
}
