#include "schedules/sharding.hpp"

#include <map>
#include <stdexcept>

namespace dtwin::sched {
namespace {

// Actions to insert into one rank's list, keyed by the index of the action they go around.
struct Insertions {
  std::map<int, ActionList> before, after;
};

// Indices of one stage's landmarks in one rank's list (-1 where absent).
struct StageSpan {
  int first_forward = -1;
  int last_early_forward = -1;  // the last F before the first backward
  int first_backward = -1;      // B or I: a W never precedes its I
  int last_backward = -1;       // B, I or W
  int optim = -1;
};

StageSpan span_of(const ActionList& actions, int stage) {
  StageSpan span;
  for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
    const Action& a = actions[i];
    if (a.stage != stage) continue;
    if (a.kind == ActionKind::F) {
      if (span.first_forward < 0) span.first_forward = i;
      if (span.first_backward < 0) span.last_early_forward = i;
    } else if (is_backward(a.kind)) {
      if (span.first_backward < 0) span.first_backward = i;
      span.last_backward = i;
    } else if (a.kind == ActionKind::OPTIM) {
      span.optim = i;
    }
  }
  return span;
}

// "After actions[i]": past the SEND of the same stage that follows it, so the send is posted
// before the collective.
int after(const ActionList& actions, int i) {
  const bool send_follows = i + 1 < static_cast<int>(actions.size()) &&
                            is_send(actions[i + 1].kind) &&
                            actions[i + 1].stage == actions[i].stage;
  return send_follows ? i + 1 : i;
}

// "Before actions[i]": ahead of the RECV that feeds it, so the collective runs while the input is
// on its way.
int before(const ActionList& actions, int i) {
  const bool recv_precedes = i > 0 && is_receive(actions[i - 1].kind) &&
                             actions[i - 1].stage == actions[i].stage &&
                             actions[i - 1].microbatch == actions[i].microbatch;
  return recv_precedes ? i - 1 : i;
}

// Adds stage `stage`'s sync actions to `out` (see add_data_parallel_sync).
void place(const Layout& layout, const ActionList& actions, int stage, Insertions& out) {
  const StageSpan span = span_of(actions, stage);
  if (span.first_forward < 0 || span.first_backward < 0) return;  // the validator reports it
  const auto add_after = [&](int i, ActionKind kind) {
    out.after[after(actions, i)].push_back({stage, kind});
  };
  const auto add_before = [&](int i, ActionKind kind) {
    out.before[before(actions, i)].push_back({stage, kind});
  };
  if (layout.zero == 0) {
    const bool weights = layout.dp_sync == DpSync::WeightAverage;
    add_after(weights ? span.optim : span.last_backward, ActionKind::ALLREDUCE);
  } else if (layout.zero < 3) {
    add_after(span.last_backward, ActionKind::REDUCE_GRAD);
    add_after(span.optim, ActionKind::UNSHARD);
  } else if (layout.zero3_gather == Zero3Gather::Layer) {
    // Around every pass, as DeepSpeed ZeRO-3 and FSDP gather, run and free each layer; each
    // microbatch's gradients reduced after its last backward.
    std::map<int, int> last_backward;  // microbatch -> index
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action& a = actions[i];
      if (a.stage != stage || !is_compute(a.kind)) continue;
      add_before(i, ActionKind::UNSHARD);
      add_after(i, ActionKind::RESHARD);
      if (is_backward(a.kind)) last_backward[a.microbatch] = i;
    }
    for (const auto& [microbatch, i] : last_backward) add_after(i, ActionKind::REDUCE_GRAD);
  } else {
    add_before(span.first_forward, ActionKind::UNSHARD);
    add_after(span.last_early_forward, ActionKind::RESHARD);
    add_before(span.first_backward, ActionKind::UNSHARD);
    add_after(span.last_backward, ActionKind::RESHARD);
    add_after(span.last_backward, ActionKind::REDUCE_GRAD);
  }
}

ActionList with_insertions(const ActionList& actions, const Insertions& insertions) {
  ActionList out;
  const auto append = [&out](const std::map<int, ActionList>& at, int i) {
    if (auto it = at.find(i); it != at.end())
      out.insert(out.end(), it->second.begin(), it->second.end());
  };
  for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
    append(insertions.before, i);
    out.push_back(actions[i]);
    append(insertions.after, i);
  }
  return out;
}

void check_zero(const Layout& layout) {
  const std::string zero = "layout.zero " + std::to_string(layout.zero);
  if (layout.zero < 0 || layout.zero > 3)
    throw std::invalid_argument(zero + ": expected 0, 1, 2 or 3");
  if (layout.zero > 0 && layout.dp_sync != DpSync::AllReduce)
    throw std::invalid_argument(zero + " needs layout.dp_sync allreduce, got " +
                                std::string(kDpSyncNames.name(layout.dp_sync)));
  if (const std::string error = shard_error(layout); !error.empty())
    throw std::invalid_argument(error);
}

}  // namespace

Schedule add_data_parallel_sync(const Schedule& schedule) {
  const Layout& layout = schedule.layout;
  check_zero(layout);
  Schedule lowered = schedule;
  if (layout.dp == 1) return lowered;
  for (ActionList& actions : lowered.ranks) {
    Insertions insertions;
    for (const Action& a : actions)
      if (a.kind == ActionKind::OPTIM) place(layout, actions, a.stage, insertions);
    actions = with_insertions(actions, insertions);
  }
  return lowered;
}

}  // namespace dtwin::sched
