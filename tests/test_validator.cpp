#include <catch2/catch.hpp>

#include "schedules/format.hpp"
#include "schedules/validate.hpp"

using namespace dtwin::sched;

namespace {

const Layout kPipeline2{1, 2, 1, 2, DpSync::AllReduce};  // dp 1, pp 2, v 1, m 2

// Validates a schedule written in text form; returns the validator's full message ("" if none).
std::string validation_error(const std::string& text, Expect expect,
                             const Layout& layout = kPipeline2) {
  try {
    validate(parse_text(text, "test", layout), expect);
  } catch (const ScheduleError& e) {
    return e.what();
  }
  return "";
}

const char* kGood =
    "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0OPTIM\n"
    "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1OPTIM\n";

}  // namespace

TEST_CASE("a correct lowered schedule passes") {
  CHECK(validation_error(kGood, Expect::Lowered) == "");
}

TEST_CASE("planted faults are rejected with the right message and the action marked") {
  SECTION("B before F") {
    const std::string error =
        validation_error("rank 0: 0B0 0F0 0F1 0B1\nrank 1: 1F0 1B0 1F1 1B1\n", Expect::ComputeOnly);
    CHECK_THAT(error, Catch::Contains("0B0 runs before 0F0 on rank 0"));
    CHECK_THAT(error, Catch::Contains("rank 0: >0B0< >0F0<"));
  }
  SECTION("I before W, reversed") {
    const std::string error = validation_error(
        "rank 0: 0F0 0F1 0W0 0I0 0I1 0W1\nrank 1: 1F0 1I0 1W0 1F1 1I1 1W1\n", Expect::ComputeOnly);
    CHECK_THAT(error, Catch::Contains("0W0 runs before 0I0 on rank 0"));
  }
  SECTION("dropped RECV") {
    const std::string error = validation_error(
        "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0OPTIM\n"
        "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0 1F1 1B1 1SEND_B1 1OPTIM\n",
        Expect::Lowered);
    CHECK_THAT(error, Catch::Contains("0SEND_F1 on rank 0 has no matching 1RECV_F1 on rank 1"));
    CHECK_THAT(error, Catch::Contains(">0SEND_F1<"));
  }
  SECTION("send/recv cycle") {
    // Rank 0 waits for a gradient before it sends the activation that produces it.
    const std::string error = validation_error(
        "rank 0: 0F0 0F1 0SEND_F1 0RECV_B0 0SEND_F0 0B0 0RECV_B1 0B1 0OPTIM\n"
        "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1OPTIM\n",
        Expect::Lowered);
    CHECK_THAT(error, Catch::Contains("deadlock"));
    CHECK_THAT(error, Catch::Contains("rank 0 waits at 0RECV_B0; rank 1 waits at 1RECV_F0"));
    CHECK_THAT(error, Catch::Contains(">0RECV_B0<"));
    CHECK_THAT(error, Catch::Contains(">1RECV_F0<"));
  }
  SECTION("stage on two ranks") {
    const std::string error = validation_error(
        "rank 0: 0F0 0F1 0B0 0B1\nrank 1: 1F0 1B0 0F0 1F1 1B1\n", Expect::ComputeOnly);
    CHECK_THAT(error, Catch::Contains("stage 0 runs on rank 1 and rank 0 of pipeline 0"));
    CHECK_THAT(error, Catch::Contains("a stage runs on exactly one rank per pipeline"));
  }
  SECTION("V placement: stage 2pp-1 runs on rank 0, not on stage mod pp") {
    // ZB-V's pp 2, m 1 order (tests/golden/ holds the larger ones).
    const std::string v_shape =
        "rank 0: 0F0 3F0 3I0 3W0 0I0 0W0\nrank 1: 1F0 2F0 2I0 2W0 1I0 1W0\n";
    Layout layout{1, 2, 2, 1};
    layout.placement = StagePlacement::VShape;
    CHECK(validation_error(v_shape, Expect::ComputeOnly, layout) == "");
    layout.placement = StagePlacement::Interleaved;
    CHECK_THAT(validation_error(v_shape, Expect::ComputeOnly, layout),
               Catch::Contains("3F0 on rank 0: stage 3 belongs on rank 1 (stage mod pp)"));
    const std::string interleaved =
        "rank 0: 0F0 2F0 2I0 2W0 0I0 0W0\nrank 1: 1F0 3F0 3I0 3W0 1I0 1W0\n";
    layout.placement = StagePlacement::VShape;
    CHECK_THAT(validation_error(interleaved, Expect::ComputeOnly, layout),
               Catch::Contains("2F0 on rank 0: stage 2 belongs on rank 1 (V placement)"));
  }
  SECTION("missing OPTIM") {
    const std::string error = validation_error(
        "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0OPTIM\n"
        "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1\n",
        Expect::Lowered);
    CHECK_THAT(error, Catch::Contains("stage 1 on rank 1 has 0 OPTIM, expected 1"));
  }
  SECTION("missing forward of a microbatch") {
    const std::string error =
        validation_error("rank 0: 0F0 0B0 0B1\nrank 1: 1F0 1B0 1F1 1B1\n", Expect::ComputeOnly);
    CHECK_THAT(error,
               Catch::Contains("stage 0 microbatch 1 on rank 0: 0 forwards (F), expected 1"));
  }
  SECTION("W without its I") {
    const std::string error = validation_error(
        "rank 0: 0F0 0F1 0B0 0B1 0W1\nrank 1: 1F0 1B0 1F1 1B1\n", Expect::ComputeOnly);
    CHECK_THAT(error, Catch::Contains("expected I = W"));
  }
  SECTION("communication in a compute-only schedule") {
    CHECK_THAT(validation_error(kGood, Expect::ComputeOnly),
               Catch::Contains("0SEND_F0 on rank 0: a compute-only schedule holds only"));
  }
  SECTION("missing gradient ALLREDUCE with dp > 1") {
    const Layout dp2{2, 1, 1, 1, DpSync::AllReduce};
    CHECK_THAT(validation_error("rank 0: 0F0 0B0 0OPTIM\nrank 1: 0F0 0B0 0ALLREDUCE 0OPTIM\n",
                                Expect::Lowered, dp2),
               Catch::Contains("stage 0 on rank 0 has 0 ALLREDUCE, expected 1 (dp > 1)"));
  }
  SECTION("gradient ALLREDUCE after OPTIM") {
    const Layout dp2{2, 1, 1, 1, DpSync::AllReduce};
    CHECK_THAT(validation_error("rank 0: 0F0 0B0 0OPTIM 0ALLREDUCE\n"
                                "rank 1: 0F0 0B0 0OPTIM 0ALLREDUCE\n",
                                Expect::Lowered, dp2),
               Catch::Contains("must come after the last backward and before OPTIM"));
  }
}
