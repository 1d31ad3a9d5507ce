// Who receives what a SEND sends.
#pragma once

#include "schedules/schedule.hpp"

namespace dtwin::sched {

struct Transfer {
  int receiver = 0;  ///< global rank
  Action receive;    ///< the matching RECV_F or RECV_B on that rank
};

/// The receiving end of `send` (a SEND_F or SEND_B run by `rank`): SEND_F of stage s is received
/// by RECV_F of stage s+1, SEND_B of stage s by RECV_B of stage s-1, in the same replica.
inline Transfer transfer_of(const Layout& layout, int rank, const Action& send) {
  const bool forward = send.kind == ActionKind::SEND_F;
  const int stage = forward ? send.stage + 1 : send.stage - 1;
  return {layout.rank_of_stage(stage, rank),
          {stage, forward ? ActionKind::RECV_F : ActionKind::RECV_B, send.microbatch}};
}

}  // namespace dtwin::sched
