#include "trace/chrome_tracks.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "schedules/transfer.hpp"

namespace dtwin::trace {
namespace {

using sched::ActionKind;

// A family of tracks of one rank, in the order their tids are given: compute, data-parallel
// collectives, communication inside compute, then point-to-point channels by peer and kind.
struct Family {
  enum Order { Compute, Collectives, Inner, Channel } order = Compute;
  int peer = 0;                     // Channel: the rank at the other end
  ActionKind kind = ActionKind::F;  // Channel: SEND_F, RECV_F, SEND_B or RECV_B
  auto operator<=>(const Family&) const = default;
};

// One slice to place: an event's action span, or the communication inside it (`inner`).
struct Slice {
  std::int64_t start = 0, end = 0;  // nanoseconds
  std::size_t event = 0;
  bool inner = false;
};

bool on_compute_track(ActionKind kind) {
  return sched::is_compute(kind) || kind == ActionKind::OPTIM;
}

Family family_of(const TimedAction& e, const sched::Layout& layout) {
  if (on_compute_track(e.action.kind)) return {Family::Compute};
  if (!sched::is_p2p(e.action.kind)) return {Family::Collectives};
  return {Family::Channel, sched::peer_of(layout, e.rank, e.action).rank, e.action.kind};
}

std::string family_name(const Family& family) {
  switch (family.order) {
    case Family::Compute:
      return "compute";
    case Family::Collectives:
      return "data-parallel collectives";
    case Family::Inner:
      return "communication inside compute";
    case Family::Channel:
      break;
  }
  return std::string(sched::kind_name(family.kind)) +
         (sched::is_send(family.kind) ? " to rank " : " from rank ") + std::to_string(family.peer);
}

// Lanes of `slices` (one family's), in their order: each slice, taken by start, goes into the
// first lane whose last slice ended by its start.
std::vector<int> assign_lanes(std::vector<Slice>& slices) {
  std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return std::tie(a.start, a.end, a.event) < std::tie(b.start, b.end, b.event);
  });
  std::vector<std::int64_t> lane_end;
  std::vector<int> lanes;
  for (const Slice& slice : slices) {
    auto free = std::find_if(lane_end.begin(), lane_end.end(),
                             [&](std::int64_t end) { return end <= slice.start; });
    if (free == lane_end.end()) free = lane_end.insert(lane_end.end(), slice.start);
    *free = slice.end;
    lanes.push_back(static_cast<int>(free - lane_end.begin()));
  }
  return lanes;
}

// The middle of e's slice, in nanoseconds (rounded down).
std::int64_t middle_ns(const TimedAction& e) {
  const std::int64_t start = to_ns(e.start);
  return start + (to_ns(e.end) - start) / 2;
}

}  // namespace

std::int64_t to_ns(double seconds) {
  return std::llround(seconds * 1e9);
}

std::optional<std::pair<std::int64_t, std::int64_t>> inner_comm_ns(const TimedAction& e) {
  if (!on_compute_track(e.action.kind) || e.exposed_comm <= 0) return std::nullopt;
  return std::pair{to_ns(e.end - e.exposed_comm), to_ns(e.end)};
}

Tracks lay_out_tracks(const std::vector<TimedAction>& events, const sched::Layout& layout) {
  std::map<std::pair<int, Family>, std::vector<Slice>> families;  // (rank, family) -> slices
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TimedAction& e = events[i];
    families[{e.rank, family_of(e, layout)}].push_back({to_ns(e.start), to_ns(e.end), i, false});
    if (const auto inner = inner_comm_ns(e))
      families[{e.rank, {Family::Inner}}].push_back({inner->first, inner->second, i, true});
  }
  Tracks tracks;
  tracks.action_tid.assign(events.size(), 0);
  tracks.inner_tid.assign(events.size(), -1);
  std::map<int, int> next_tid;  // rank -> its first tid not given yet
  for (auto& [key, slices] : families) {
    const auto& [rank, family] = key;
    const std::vector<int> lanes = assign_lanes(slices);
    const int lane_count = *std::max_element(lanes.begin(), lanes.end()) + 1;
    std::vector<int> lane_tid(lane_count);
    for (int lane = 0; lane < lane_count; ++lane) {
      const bool first_compute = family.order == Family::Compute && lane == 0;
      lane_tid[lane] = first_compute ? 0 : next_tid.try_emplace(rank, 1).first->second++;
      tracks.names[{rank, lane_tid[lane]}] =
          family_name(family) + (lane > 0 ? " (" + std::to_string(lane + 1) + ")" : "");
    }
    for (std::size_t k = 0; k < slices.size(); ++k)
      (slices[k].inner ? tracks.inner_tid : tracks.action_tid)[slices[k].event] =
          lane_tid[lanes[k]];
  }
  return tracks;
}

std::vector<Flow> flows(const std::vector<TimedAction>& events, const sched::Layout& layout) {
  // (step, rank, stage, kind, microbatch) of each RECV -> its index
  using Key = std::tuple<int, int, int, ActionKind, int>;
  std::map<Key, std::size_t> receives;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TimedAction& e = events[i];
    if (sched::is_receive(e.action.kind))
      receives[{e.step, e.rank, e.action.stage, e.action.kind, e.action.microbatch}] = i;
  }
  std::vector<Flow> out;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TimedAction& e = events[i];
    if (!sched::is_send(e.action.kind)) continue;
    const sched::Endpoint to = sched::receiver_of(layout, e.rank, e.action);
    const auto it =
        receives.find({e.step, to.rank, to.action.stage, to.action.kind, to.action.microbatch});
    if (it == receives.end()) continue;
    const TimedAction& receive = events[it->second];
    const std::int64_t send_ns = middle_ns(e);
    const std::int64_t receive_ns = std::max(middle_ns(receive), send_ns + 1);
    if (send_ns > to_ns(e.start) && receive_ns > to_ns(receive.start) &&
        receive_ns < to_ns(receive.end))
      out.push_back({i, it->second, send_ns, receive_ns});
  }
  return out;
}

}  // namespace dtwin::trace
