// Who talks to whom: the two ends of every point-to-point transfer and the tag of its message.
// The one rule used by lowering, validation, the dry run, the simulator and the executor.
#pragma once

#include <compare>
#include <optional>
#include <string>

#include "schedules/schedule.hpp"

namespace dtwin::sched {

/// One end of a transfer.
struct Endpoint {
  int rank = 0;   ///< global rank
  Action action;  ///< its SEND_F, SEND_B, RECV_F or RECV_B
};

/// The receiving end of `send` (a SEND_F or SEND_B run by `rank`): SEND_F of stage s is received
/// by RECV_F of stage s+1, SEND_B of stage s by RECV_B of stage s-1, in the same replica.
Endpoint receiver_of(const Layout& layout, int rank, const Action& send);

/// The sending end of `receive` (a RECV_F or RECV_B run by `rank`): RECV_F of stage s is sent by
/// SEND_F of stage s-1, RECV_B of stage s by SEND_B of stage s+1, in the same replica. The exact
/// inverse of receiver_of.
Endpoint sender_of(const Layout& layout, int rank, const Action& receive);

/// The other end of `p2p` (any SEND or RECV run by `rank`): receiver_of or sender_of. The stage
/// of the result may lie outside [0, num_stages) for a malformed action; its rank is then
/// meaningless.
Endpoint peer_of(const Layout& layout, int rank, const Action& p2p);

/// The channel a transfer travels on: its sending and receiving ranks (global) and what it
/// carries, a gradient (SEND_B/RECV_B) or an activation. A pair of ranks has one channel per
/// direction and kind.
struct Channel {
  int sender = 0;
  int receiver = 0;
  bool gradients = false;
  auto operator<=>(const Channel&) const = default;
};

/// The channel of `p2p` (any SEND or RECV run by `rank`), the same at both ends.
Channel channel_of(const Layout& layout, int rank, const Action& p2p);

/// Tag of the message of a transfer, the same at both ends: derived from the receiving end's
/// (stage, direction, microbatch), so unique among the transfers of a step, in
/// [0, transfer_tag_count(layout)). `p2p` is the SEND or the RECV.
int transfer_tag(const Layout& layout, const Action& p2p);

/// Number of distinct transfer tags of a step: 2 * num_stages * microbatches.
int transfer_tag_count(const Layout& layout);

/// The first message that a receiver takes in another order than its sender sends it, on one
/// channel: an ordered pair of ranks and a direction (activations or gradients). Returns
/// "rank R posts its receives from rank S in another order than their sends: its receive
/// number i is RECV, the send number i is for RECV'", or nullopt when every channel is first
/// in, first out. NCCL's send and recv ignore tags and match a pair's messages
/// in the order they were posted, so the executor gives each direction of each pair of pipeline
/// ranks its own channel and needs this order there; Gloo matches by tag and needs none.
std::optional<std::string> out_of_order_transfer(const Schedule& schedule);

}  // namespace dtwin::sched
