// When a rank may stop holding a message it sent: the first receive that proves the peer got it.
#pragma once

#include <vector>

#include "schedules/schedule.hpp"

namespace dtwin::sched {

/// For every action of `rank`'s list (schedule.ranks.at(rank)), the index in that list of the
/// receive after which the rank may wait for a SEND without blocking, or -1. A SEND to rank P
/// is delivered once P has run the RECV that matches it; a later RECV of ours from P whose
/// matching SEND comes after that RECV in P's list proves it (P runs its list in order and a
/// RECV returns with its data). The first such RECV after the SEND is its index; -1 for a SEND
/// that no receive proves (waited for at the step's end, as Gloo needs) and for every other
/// kind. The executor (runtime/executor.hpp) waits there and frees the message. Throws
/// std::out_of_range for a rank outside the schedule.
std::vector<int> send_release_points(const Schedule& schedule, int rank);

}  // namespace dtwin::sched
