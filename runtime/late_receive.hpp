// The late receive: how long a point-to-point receive takes when its rank posts it after its
// peer posted the send, right after computing, while other processes of the host compute. Gloo
// sends the payload only once the receiver said it is ready (a rendezvous), so such a receive
// waits for the sender's progress thread and then for its own, each competing for a core with
// the computing processes. The profile measures it with two real processes and a Gloo pair.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <functional>

namespace dtwin::rt {

/// What one side of the pair does between messages: computes (a pass) or nothing.
using Activity = std::function<void()>;

/// The sending side: `messages` times, posts a send of `bytes` (fp32) and of its posting time
/// to rank 1 - me of `pair`, runs `between` and waits for the send.
void send_late_receive_messages(c10d::Backend& pair, int messages, double bytes,
                                const Activity& between);

/// The receiving side: `messages` times, runs `before` and then receives the peer's message;
/// returns the mean seconds from when both ends had posted (the later of the receive's posting
/// and the send's, read from the message) to the receive's end.
double receive_late_messages(c10d::Backend& pair, int messages, double bytes,
                             const Activity& before);

}  // namespace dtwin::rt
