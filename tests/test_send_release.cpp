// When a rank may stop holding a message it sent (schedules/send_release.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "schedules/dry_run.hpp"
#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"
#include "schedules/send_release.hpp"
#include "schedules/transfer.hpp"
#include "tests/lowered_cases.hpp"

using namespace dtwin::sched;

namespace {

// Index of `a` in `rank`'s list; fails the test when absent.
int index_of(const Schedule& s, int rank, const Action& a) {
  const ActionList& list = s.ranks.at(rank);
  const auto it = std::find(list.begin(), list.end(), a);
  REQUIRE(it != list.end());
  return static_cast<int>(it - list.begin());
}

}  // namespace

TEST_CASE("a send is released at a receive that the peer sent after taking the message") {
  const auto& [name, given] = GENERATE(from_range(dtwin::test::lowered_cases()));
  CAPTURE(name, given.pp, given.virtual_stages);
  const Schedule s = dtwin::test::lowered_case(name, given);
  const Layout& layout = s.layout;  // with the kind's placement
  const DryRun run = dry_run(s);
  REQUIRE_FALSE(run.deadlocked);
  int released = 0;
  for (int rank = 0; rank < layout.group_count(); ++rank) {
    const ActionList& list = s.ranks[rank];
    const std::vector<int> release = send_release_points(s, rank);
    REQUIRE(release.size() == list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      CAPTURE(rank, to_string(list[i]));
      if (!is_send(list[i].kind)) {
        CHECK(release[i] == -1);
        continue;
      }
      if (release[i] < 0) continue;
      ++released;
      const Action& proof = list.at(release[i]);
      REQUIRE(is_receive(proof.kind));
      CHECK(release[i] > static_cast<int>(i));
      const Endpoint to = receiver_of(layout, rank, list[i]);
      const Endpoint from = sender_of(layout, rank, proof);
      CHECK(from.rank == to.rank);
      // The peer took the message before it sent the proof; in the dry run, before the proof
      // arrived.
      CHECK(index_of(s, to.rank, to.action) < index_of(s, to.rank, from.action));
      CHECK(run.start[to.rank][index_of(s, to.rank, to.action)] <= run.start[rank][release[i]]);
    }
  }
  CHECK(released > 0);
}

TEST_CASE("1F1B: an output is released by its own gradient, the cool-down's gradients never") {
  const Layout layout{1, 3, 1, 4};
  const Schedule s = lower(generate(ScheduleKind::OneFOneB, layout));
  // Rank 0 sends microbatch 0's output; rank 1 returns its gradient only after taking it.
  const std::vector<int> first = send_release_points(s, 0);
  CHECK(first.at(index_of(s, 0, {0, ActionKind::SEND_F, 0})) ==
        index_of(s, 0, {0, ActionKind::RECV_B, 0}));
  // Rank 1 sends its last input gradients to rank 0, which sends nothing after taking them.
  const std::vector<int> middle = send_release_points(s, 1);
  CHECK(middle.at(index_of(s, 1, {1, ActionKind::SEND_B, 3})) == -1);
}
