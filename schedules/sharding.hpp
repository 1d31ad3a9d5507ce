// The data-parallel sync of each stage under the layout's ZeRO stage: the lowering pass that
// places ALLREDUCE (plain data parallelism) or REDUCE_GRAD, UNSHARD and RESHARD (ZeRO-1/2/3).
#pragma once

#include "schedules/schedule.hpp"

namespace dtwin::sched {

/// Adds, when dp > 1, the data-parallel sync of every stage a rank holds, to a schedule with its
/// communication and one OPTIM per stage in place. "After X" means after X and the SEND that
/// follows it, "before X" before X and the RECV that precedes it.
/// - zero 0: ALLREDUCE after the stage's last backward for `allreduce` and `gather-scatter`,
///   after its OPTIM for `weight-average`;
/// - zero 1 and 2: REDUCE_GRAD after the last backward, UNSHARD (all-gather of the updated
///   parameters) after OPTIM;
/// - zero 3, zero3_gather stage: UNSHARD before the first F, RESHARD after the last F that
///   precedes the first backward, UNSHARD before the first backward (B or I), RESHARD then
///   REDUCE_GRAD after the last backward (B or W). Forwards that run after the first backward
///   (1F1B's steady state) use the backward's gathered parameters.
/// - zero 3, zero3_gather layer: UNSHARD before and RESHARD after every F, B, I and W of the
///   stage (each stands for its layers' gathers, DeepSpeed ZeRO-3 / FSDP), and REDUCE_GRAD after
///   each microbatch's last backward (B, or W when split), after its RESHARD.
/// With dp = 1 there is no data-parallel group and nothing is added. Throws
/// std::invalid_argument if zero is not 0..3, or above 0 with a dp_sync other than `allreduce`.
Schedule add_data_parallel_sync(const Schedule& schedule);

}  // namespace dtwin::sched
