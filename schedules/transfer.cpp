#include "schedules/transfer.hpp"

namespace dtwin::sched {

Endpoint receiver_of(const Layout& layout, int rank, const Action& send) {
  const bool forward = send.kind == ActionKind::SEND_F;
  const int stage = forward ? send.stage + 1 : send.stage - 1;
  return {layout.rank_of_stage(stage, rank),
          {stage, forward ? ActionKind::RECV_F : ActionKind::RECV_B, send.microbatch}};
}

Endpoint sender_of(const Layout& layout, int rank, const Action& receive) {
  const bool forward = receive.kind == ActionKind::RECV_F;
  const int stage = forward ? receive.stage - 1 : receive.stage + 1;
  return {layout.rank_of_stage(stage, rank),
          {stage, forward ? ActionKind::SEND_F : ActionKind::SEND_B, receive.microbatch}};
}

Endpoint peer_of(const Layout& layout, int rank, const Action& p2p) {
  return is_send(p2p.kind) ? receiver_of(layout, rank, p2p) : sender_of(layout, rank, p2p);
}

int transfer_tag(const Layout& layout, const Action& p2p) {
  const Action at = is_receive(p2p.kind) ? p2p : receiver_of(layout, 0, p2p).action;
  const int direction = at.kind == ActionKind::RECV_F ? 0 : 1;
  return (at.stage * 2 + direction) * layout.microbatches + at.microbatch;
}

int transfer_tag_count(const Layout& layout) {
  return 2 * layout.num_stages() * layout.microbatches;
}

}  // namespace dtwin::sched
