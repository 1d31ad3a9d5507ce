#include <catch2/catch.hpp>
#include <stdexcept>

#include "schedules/action.hpp"

using namespace dtwin::sched;

TEST_CASE("every action kind round-trips through its text form") {
  const std::vector<std::pair<Action, std::string>> cases = {
      {{0, ActionKind::F, 1}, "0F1"},
      {{2, ActionKind::B, 3}, "2B3"},
      {{1, ActionKind::I, 0}, "1I0"},
      {{3, ActionKind::W, 12}, "3W12"},
      {{1, ActionKind::SEND_F, 0}, "1SEND_F0"},
      {{2, ActionKind::RECV_F, 7}, "2RECV_F7"},
      {{1, ActionKind::SEND_B, 4}, "1SEND_B4"},
      {{1, ActionKind::RECV_B, 2}, "1RECV_B2"},
      {{0, ActionKind::ALLREDUCE}, "0ALLREDUCE"},
      {{0, ActionKind::UNSHARD}, "0UNSHARD"},
      {{1, ActionKind::RESHARD}, "1RESHARD"},
      {{0, ActionKind::REDUCE_GRAD}, "0REDUCE_GRAD"},
      {{10, ActionKind::OPTIM}, "10OPTIM"},
  };
  for (const auto& [action, text] : cases) {
    CAPTURE(text);
    CHECK(to_string(action) == text);
    auto parsed = parse_action(text);
    REQUIRE(parsed.has_value());
    CHECK(*parsed == action);
  }
}

TEST_CASE("malformed action texts are rejected") {
  for (const char* text :
       {"", "F0", "0F", "0X1", "0F1x", "-1F0", "0ALLREDUCE1", "0OPTIM0", "01F0", "0F01", "0SEND_0",
        "0 F0", "0UNSHARD1", "0RESHARD0", "0REDUCE_GRAD2", "0REDUCE_GRA", "UNSHARD"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_action(text).has_value());
  }
}

TEST_CASE("of_kind picks the compute kind's figure and refuses the other kinds") {
  using dtwin::sched::ActionKind;
  using dtwin::sched::of_kind;
  CHECK(of_kind(ActionKind::F, 1, 2, 3, 4, 5) == 1);
  CHECK(of_kind(ActionKind::B, 1, 2, 3, 4, 5) == 2);
  CHECK(of_kind(ActionKind::I, 1, 2, 3, 4, 5) == 3);
  CHECK(of_kind(ActionKind::W, 1, 2, 3, 4, 5) == 4);
  CHECK(of_kind(ActionKind::OPTIM, 1, 2, 3, 4, 5) == 5);
  CHECK_THROWS_AS(of_kind(ActionKind::SEND_F, 1, 2, 3, 4, 5), std::logic_error);
  CHECK_THROWS_AS(of_kind(ActionKind::ALLREDUCE, 1, 2, 3, 4, 5), std::logic_error);
}
