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

/// The sending side: `messages` times, posts a send of `bytes` (fp32) to rank 1 - me of `pair`
/// and then a one-element message saying so, runs `between` and waits for both sends. Returns
/// the CPU seconds this process's other threads (Gloo's progress threads) ran meanwhile.
double send_late_receive_messages(c10d::Backend& pair, int messages, double bytes,
                                  const Activity& between);

/// The receiving side: `messages` times, receives the peer's word that its send is posted, runs
/// `before` and then receives the payload, so that each receive is posted after its send and,
/// when `before` is shorter than the peer's `between`, while the peer computes (as a pipeline
/// rank's receive that finds its sender in its next pass). Returns the mean seconds from the
/// receive's posting to its end.
double receive_late_messages(c10d::Backend& pair, int messages, double bytes,
                             const Activity& before);

}  // namespace dtwin::rt
