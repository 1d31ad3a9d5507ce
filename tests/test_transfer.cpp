#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"
#include "schedules/transfer.hpp"
#include "tests/lowered_cases.hpp"

using namespace dtwin::sched;

namespace {

// Number of times `a` appears on `rank`.
int count(const Schedule& s, int rank, const Action& a) {
  int n = 0;
  for (const Action& b : s.ranks.at(rank)) n += b == a;
  return n;
}

}  // namespace

TEST_CASE(
    "receiver_of and sender_of are inverse, tags are unique per step, and each pair's messages "
    "are received in the order they are sent") {
  const auto& [name, given] = GENERATE(from_range(dtwin::test::lowered_cases()));
  CAPTURE(name, given.pp, given.virtual_stages);
  const Schedule s = dtwin::test::lowered_case(name, given);
  const Layout& layout = s.layout;             // with the kind's placement
  std::vector<std::set<int>> tags(layout.dp);  // tags of the SENDs of each replica
  int transfers = 0;
  for (int rank = 0; rank < layout.group_count(); ++rank)
    for (const Action& a : s.ranks[rank]) {
      if (!is_p2p(a.kind)) continue;
      CAPTURE(rank, to_string(a));
      const bool send = a.kind == ActionKind::SEND_F || a.kind == ActionKind::SEND_B;
      const Endpoint peer = send ? receiver_of(layout, rank, a) : sender_of(layout, rank, a);
      const Endpoint back = send ? sender_of(layout, peer.rank, peer.action)
                                 : receiver_of(layout, peer.rank, peer.action);
      CHECK(peer.rank != rank);
      CHECK(peer.action == peer_of(layout, rank, a).action);
      CHECK(count(s, peer.rank, peer.action) == 1);
      CHECK(back.rank == rank);
      CHECK(back.action == a);
      const int tag = transfer_tag(layout, a);
      CHECK(tag == transfer_tag(layout, peer.action));
      CHECK(tag >= 0);
      CHECK(tag < transfer_tag_count(layout));
      if (send) {
        CHECK(tags[layout.dp_index(rank)].insert(tag).second);
        ++transfers;
      }
    }
  CHECK(transfers > 0);
  CHECK(out_of_order_transfer(s).value_or("") == "");  // as NCCL needs
}

TEST_CASE("a receiver that takes a pair's messages out of order is named") {
  Schedule s = lower(generate(ScheduleKind::GPipe, {1, 2, 1, 2}));
  ActionList& last = s.ranks[1];
  // Swap rank 1's two activation receives: microbatch 1's now comes first.
  std::vector<std::size_t> receives;
  for (std::size_t i = 0; i < last.size(); ++i)
    if (last[i].kind == ActionKind::RECV_F) receives.push_back(i);
  REQUIRE(receives.size() == 2);
  std::swap(last[receives[0]], last[receives[1]]);
  const auto disorder = out_of_order_transfer(s);
  REQUIRE(disorder);
  CHECK(*disorder ==
        "rank 1 posts its receives from rank 0 in another order than their sends: its receive "
        "number 1 is " +
            to_string(last[receives[0]]) + ", the send number 1 is for " +
            to_string(last[receives[1]]));
}
