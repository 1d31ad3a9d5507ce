#include "schedules/send_release.hpp"

#include <map>
#include <tuple>

#include "schedules/transfer.hpp"

namespace dtwin::sched {
namespace {

// Position of each p2p action in a rank's list: (kind, stage, microbatch) -> index.
using P2pIndex = std::map<std::tuple<ActionKind, int, int>, int>;

P2pIndex index_p2p(const ActionList& actions) {
  P2pIndex index;
  for (int i = 0; i < static_cast<int>(actions.size()); ++i)
    if (is_p2p(actions[i].kind))
      index.emplace(std::tuple{actions[i].kind, actions[i].stage, actions[i].microbatch}, i);
  return index;
}

int position(const P2pIndex& index, const Action& a) {
  auto it = index.find({a.kind, a.stage, a.microbatch});
  return it == index.end() ? -1 : it->second;
}

}  // namespace

std::vector<int> send_release_points(const Schedule& schedule, int rank) {
  const ActionList& actions = schedule.ranks.at(rank);
  const int n = static_cast<int>(actions.size());
  std::vector<int> release(n, -1);
  std::map<int, P2pIndex> peers;  // the p2p positions of each peer rank, built once
  auto positions = [&](int peer) -> const P2pIndex& {
    auto it = peers.find(peer);
    if (it == peers.end()) it = peers.emplace(peer, index_p2p(schedule.ranks.at(peer))).first;
    return it->second;
  };
  for (int i = 0; i < n; ++i) {
    if (!is_send(actions[i].kind)) continue;
    const Endpoint to = receiver_of(schedule.layout, rank, actions[i]);
    if (to.rank < 0 || to.rank >= static_cast<int>(schedule.ranks.size())) continue;
    const int received_at = position(positions(to.rank), to.action);
    if (received_at < 0) continue;
    for (int j = i + 1; j < n && release[i] < 0; ++j) {
      if (!is_receive(actions[j].kind)) continue;
      const Endpoint from = sender_of(schedule.layout, rank, actions[j]);
      if (from.rank == to.rank && position(positions(to.rank), from.action) > received_at)
        release[i] = j;
    }
  }
  return release;
}

}  // namespace dtwin::sched
