// The bytes one member of a group puts on the wire, and takes off it, in one collective, as
// Gloo's algorithms move them (the runtime's CPU backend): the simulator's prediction of the
// data-parallel traffic and the runtime's count at its communicator are both these figures.
#pragma once

#include <cstdint>

namespace dtwin {

/// Bytes a member sends to and receives from the other members (what it keeps is not counted).
struct WireBytes {
  int64_t sent = 0;
  int64_t received = 0;
  WireBytes& operator+=(const WireBytes& other) {
    sent += other.sent;
    received += other.received;
    return *this;
  }
};

/// Gloo's largest ring segment (AllreduceOptions::kMaxSegmentSize), bytes.
inline constexpr int64_t kGlooMaxSegmentBytes = 1 << 20;

/// Member `member` of `members` in Gloo's ring all-reduce of a buffer of `bytes` (elements of
/// `element_bytes`; gloo/allreduce.cc, ring). The buffer is cut into numSegments =
/// roundUp(max(⌈bytes / max_segment⌉, 2·members), members) segments of segment =
/// roundUp(⌈bytes / numSegments⌉, element_bytes) bytes, the segments into one chunk per member;
/// chunk c holds clip(bytes − c·S, 0, S) bytes, S = segment·numSegments/members. Member r sends
/// every chunk but its own in the reduce-scatter and every chunk but r−1's in the all-gather, to
/// r−1, and receives what r+1 sends: sent = 2·bytes − |chunk r| − |chunk r−1|, received = 2·bytes
/// − |chunk r+1| − |chunk r|; summed over the members, 2·(members−1)·bytes each way. Nothing with
/// one member. Throws std::invalid_argument when bytes is not a whole number of elements.
WireBytes ring_allreduce_bytes(int64_t bytes, int64_t element_bytes, int members, int member,
                               int64_t max_segment_bytes = kGlooMaxSegmentBytes);

/// Member `member` of `members` in a gather of `bytes` from each member to `root` (gloo/gather.cc:
/// every other member sends its buffer to the root): a member sends `bytes`, the root receives
/// (members−1)·bytes.
WireBytes gather_bytes(int64_t bytes, int members, int member, int root = 0);

/// Member `member` in a scatter of `bytes` to each member from `root` (gloo/scatter.cc): the root
/// sends (members−1)·bytes, every other member receives `bytes`.
WireBytes scatter_bytes(int64_t bytes, int members, int member, int root = 0);

}  // namespace dtwin
