#include "schedules/transfer.hpp"

#include <map>
#include <vector>

namespace dtwin::sched {

Endpoint receiver_of(const Layout& layout, int rank, const Action& send) {
  const bool forward = send.kind == ActionKind::SEND_F;
  const int stage = forward ? send.stage + 1 : send.stage - 1;
  return {layout.group_of_stage(stage, rank),
          {stage, forward ? ActionKind::RECV_F : ActionKind::RECV_B, send.microbatch}};
}

Endpoint sender_of(const Layout& layout, int rank, const Action& receive) {
  const bool forward = receive.kind == ActionKind::RECV_F;
  const int stage = forward ? receive.stage - 1 : receive.stage + 1;
  return {layout.group_of_stage(stage, rank),
          {stage, forward ? ActionKind::SEND_F : ActionKind::SEND_B, receive.microbatch}};
}

Endpoint peer_of(const Layout& layout, int rank, const Action& p2p) {
  return is_send(p2p.kind) ? receiver_of(layout, rank, p2p) : sender_of(layout, rank, p2p);
}

Channel channel_of(const Layout& layout, int rank, const Action& p2p) {
  const int peer = peer_of(layout, rank, p2p).rank;
  const bool gradients = p2p.kind == ActionKind::SEND_B || p2p.kind == ActionKind::RECV_B;
  return is_send(p2p.kind) ? Channel{rank, peer, gradients} : Channel{peer, rank, gradients};
}

int transfer_tag(const Layout& layout, const Action& p2p) {
  const Action at = is_receive(p2p.kind) ? p2p : receiver_of(layout, 0, p2p).action;
  const int direction = at.kind == ActionKind::RECV_F ? 0 : 1;
  return (at.stage * 2 + direction) * layout.microbatches + at.microbatch;
}

int transfer_tag_count(const Layout& layout) {
  return 2 * layout.num_stages() * layout.microbatches;
}

std::optional<std::string> out_of_order_transfer(const Schedule& schedule) {
  const Layout& layout = schedule.layout;
  // Each channel's transfers in the order each end posts them, named by their receives.
  std::map<Channel, std::vector<Action>> sent, received;
  for (int rank = 0; rank < static_cast<int>(schedule.ranks.size()); ++rank) {
    for (const Action& a : schedule.ranks[rank]) {
      if (!is_p2p(a.kind)) continue;
      if (is_send(a.kind))
        sent[channel_of(layout, rank, a)].push_back(receiver_of(layout, rank, a).action);
      else
        received[channel_of(layout, rank, a)].push_back(a);
    }
  }
  for (const auto& [channel, receives] : received) {
    const std::vector<Action>& sends = sent[channel];
    for (std::size_t i = 0; i < receives.size() && i < sends.size(); ++i) {
      if (receives[i] == sends[i]) continue;
      return "rank " + std::to_string(channel.receiver) + " posts its receives from rank " +
             std::to_string(channel.sender) + " in another order than their sends: its " +
             "receive number " + std::to_string(i + 1) + " is " + to_string(receives[i]) +
             ", the send number " + std::to_string(i + 1) + " is for " + to_string(sends[i]);
    }
  }
  return std::nullopt;
}

}  // namespace dtwin::sched
