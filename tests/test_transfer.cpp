#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"
#include "schedules/transfer.hpp"

using namespace dtwin::sched;

namespace {

// Number of times `a` appears on `rank`.
int count(const Schedule& s, int rank, const Action& a) {
  int n = 0;
  for (const Action& b : s.ranks.at(rank)) n += b == a;
  return n;
}

}  // namespace

TEST_CASE("receiver_of and sender_of are inverse and tags are unique per step") {
  const auto [name, layout] = GENERATE(table<std::string, Layout>({
      {"gpipe", {2, 3, 1, 6}},
      {"gpipe", {2, 4, 1, 8}},
      {"1f1b", {2, 3, 1, 6}},
      {"1f1b", {2, 4, 1, 8}},
      {"interleaved-1f1b", {2, 3, 2, 6}},
      {"interleaved-1f1b", {2, 4, 2, 8}},
      {"zb-h1", {2, 3, 1, 6}},
      {"zb-h1", {2, 4, 1, 8}},
  }));
  CAPTURE(name, layout.pp, layout.virtual_stages);
  const Schedule s = lower(generate(*kScheduleKindNames.parse(name), layout));
  std::vector<std::set<int>> tags(layout.dp);  // tags of the SENDs of each replica
  int transfers = 0;
  for (int rank = 0; rank < layout.world_size(); ++rank)
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
}
