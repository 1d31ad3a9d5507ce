// Fault injection for the failure tests: a rank that kills itself at a chosen point of a chosen
// step, so that a test can stop a real process exactly during an all-reduce or a checkpoint.
#pragma once

#include <cstdint>
#include <string_view>

namespace dtwin::rt {

/// Reads DTWIN_FAULT="RANK:POINT:STEP" once (unset: no fault). Throws UserError when it is set
/// but malformed. Called by train_rank before the first step.
void arm_fault_injection(int rank);

/// Sends SIGKILL to this process if the armed fault names this rank, `point` (an action kind
/// such as "ALLREDUCE", or "checkpoint") and `step` (1-based, as the progress line counts
/// steps; for "checkpoint", the steps the checkpoint holds). A no-op when nothing is armed.
void inject_fault(std::string_view point, int64_t step);

}  // namespace dtwin::rt
