#include "schedules/lowering.hpp"

#include "schedules/sharding.hpp"
#include "schedules/transfer.hpp"

#include <optional>
#include <set>
#include <tuple>

namespace dtwin::sched {
namespace {

std::set<int> stages_on(const ActionList& actions) {
  std::set<int> stages;
  for (const Action& a : actions)
    if (is_compute(a.kind)) stages.insert(a.stage);
  return stages;
}

// The SEND that hands on what compute action `a` of `rank` produces, if its consumer runs on
// another rank.
std::optional<Action> send_after(const Layout& layout, int rank, const Action& a) {
  const bool forward = a.kind == ActionKind::F && a.stage < layout.num_stages() - 1;
  const bool input_grad = (a.kind == ActionKind::B || a.kind == ActionKind::I) && a.stage > 0;
  if (!forward && !input_grad) return std::nullopt;
  const Action send{a.stage, forward ? ActionKind::SEND_F : ActionKind::SEND_B, a.microbatch};
  if (receiver_of(layout, rank, send).rank == rank) return std::nullopt;
  return send;
}

}  // namespace

Schedule add_communication(const Schedule& schedule) {
  const Layout& layout = schedule.layout;
  Schedule lowered{schedule.name, layout, std::vector<ActionList>(schedule.ranks.size())};
  // Receives that senders placed for their peers: (rank, stage, kind, microbatch) to emit right
  // before the consuming compute action of that rank.
  std::set<std::tuple<int, int, ActionKind, int>> receives;
  for (int rank = 0; rank < static_cast<int>(schedule.ranks.size()); ++rank)
    for (const Action& a : schedule.ranks[rank])
      if (const std::optional<Action> send = send_after(layout, rank, a)) {
        const Endpoint to = receiver_of(layout, rank, *send);
        receives.insert({to.rank, to.action.stage, to.action.kind, to.action.microbatch});
      }
  for (int rank = 0; rank < static_cast<int>(schedule.ranks.size()); ++rank) {
    ActionList& out = lowered.ranks[rank];
    for (const Action& a : schedule.ranks[rank]) {
      const bool forward = a.kind == ActionKind::F;
      const bool input_grad = a.kind == ActionKind::B || a.kind == ActionKind::I;
      ActionKind recv = forward ? ActionKind::RECV_F : ActionKind::RECV_B;
      if ((forward || input_grad) && receives.count({rank, a.stage, recv, a.microbatch}))
        out.push_back({a.stage, recv, a.microbatch});
      out.push_back(a);
      if (const std::optional<Action> send = send_after(layout, rank, a)) out.push_back(*send);
    }
  }
  return lowered;
}

Schedule add_sync_and_optimizer(const Schedule& schedule) {
  Schedule lowered = schedule;
  for (ActionList& actions : lowered.ranks)
    for (int stage : stages_on(actions)) actions.push_back({stage, ActionKind::OPTIM});
  return add_data_parallel_sync(lowered);
}

Schedule lower(const Schedule& schedule) {
  return add_sync_and_optimizer(add_communication(schedule));
}

}  // namespace dtwin::sched
