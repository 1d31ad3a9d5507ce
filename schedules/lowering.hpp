// Lowering passes: pure functions that turn a compute-only schedule into the one that the
// simulator and the runtime execute.
#pragma once

#include "schedules/schedule.hpp"

namespace dtwin::sched {

/// Adds the point-to-point transfers between pipeline ranks. Each SEND is placed right after the
/// compute action that produces its tensor (SEND_F after F of stage s, SEND_B after B or I of
/// stage s), and the sender's pass places the peer's RECV right before the action that consumes
/// it (RECV_F before F of stage s+1, RECV_B before B or I of stage s-1). Sends are asynchronous,
/// so the lowered schedule waits only where the compute-only one already waited: lowering a
/// deadlock-free schedule cannot produce a hang. Stages on the same rank exchange nothing.
Schedule add_communication(const Schedule& schedule);

/// Adds the data-parallel sync and the optimizer step: one ALLREDUCE per stage when dp > 1,
/// placed right after the stage's last backward (and the send that follows it) for `allreduce`
/// and `gather-scatter`, or right after the stage's OPTIM for `weight-average`; one OPTIM per
/// stage at the end of its rank's list, in stage order.
Schedule add_sync_and_optimizer(const Schedule& schedule);

/// add_sync_and_optimizer(add_communication(schedule)).
Schedule lower(const Schedule& schedule);

}  // namespace dtwin::sched
