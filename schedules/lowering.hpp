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

/// Adds the optimizer step and the data-parallel sync: one OPTIM per stage at the end of its
/// rank's list, in stage order, then add_data_parallel_sync (schedules/sharding.hpp): with
/// dp > 1, one ALLREDUCE per stage for layout.zero 0, REDUCE_GRAD, UNSHARD and RESHARD for
/// ZeRO-1/2/3. Throws std::invalid_argument as add_data_parallel_sync.
Schedule add_sync_and_optimizer(const Schedule& schedule);

/// add_sync_and_optimizer(add_communication(schedule)).
Schedule lower(const Schedule& schedule);

}  // namespace dtwin::sched
