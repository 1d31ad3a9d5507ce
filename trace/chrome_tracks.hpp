// Where a timeline's slices go in its Chrome trace: one track (thread, tid) per kind of work and
// per point-to-point channel of a rank, with further lanes where a channel's slices overlap, so
// that the slices of every track are disjoint, as Perfetto needs them; and which SEND slice each
// RECV slice receives, for the trace's flow arrows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedules/schedule.hpp"
#include "trace/timed_action.hpp"

namespace dtwin::trace {

/// `seconds` in whole nanoseconds (rounded): the grid the Chrome trace's times lie on, so that a
/// reader sees exactly the spans the tracks were laid out with.
std::int64_t to_ns(double seconds);

/// The span of the communication inside compute action `e` (tensor-parallel collectives,
/// offload transfers), drawn at the end of its span as long as that communication took, in
/// nanoseconds; nullopt where it has none (not a compute action, or no exposed_comm).
std::optional<std::pair<std::int64_t, std::int64_t>> inner_comm_ns(const TimedAction& e);

/// The tracks of a timeline's slices. Tid 0 of every rank is its compute (F, B, I, W, OPTIM);
/// the others, numbered from 1 in this order where the rank has them: its data-parallel
/// collectives (ALLREDUCE, UNSHARD, RESHARD, REDUCE_GRAD), the communication inside its compute
/// actions, then one track per channel and lane, by peer rank and kind ("SEND_F to rank 2",
/// "RECV_B from rank 2", the second lane "SEND_F to rank 2 (2)").
struct Tracks {
  std::vector<int> action_tid;  ///< per event: the tid of its slice
  std::vector<int> inner_tid;   ///< per event: the tid of its inner_comm_ns slice; -1 if none
  std::map<std::pair<int, int>, std::string> names;  ///< (rank, tid) -> thread name
};

/// Lays out the slices of `events` (their to_ns spans): each family of tracks takes its slices
/// by start, each into the first of its lanes whose last slice ended by then.
Tracks lay_out_tracks(const std::vector<TimedAction>& events, const sched::Layout& layout);

/// A transfer's flow arrow: a SEND's event and its RECV's, and the times (nanoseconds) its two
/// ends bind at, each strictly inside its slice (a flow event binds to the slice enclosing it),
/// the SEND's first: the middle of the SEND's slice, and the middle of the RECV's or just after
/// the SEND's end of the arrow if that is later.
struct Flow {
  std::size_t send = 0, receive = 0;
  std::int64_t send_ns = 0, receive_ns = 0;
};

/// The flows of `events`: each SEND_F or SEND_B with the RECV of the same step that
/// sched::receiver_of names, where both are in `events` and their slices leave such times (not
/// where a slice is shorter than 2 ns or the RECV ends by the SEND's middle); in the SENDs' order.
std::vector<Flow> flows(const std::vector<TimedAction>& events, const sched::Layout& layout);

}  // namespace dtwin::trace
