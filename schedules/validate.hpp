// The schedule validator: every command checks its schedule with it before use.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"

namespace dtwin::sched {

/// What the validator expects: a generator's compute-only output, or a fully lowered schedule
/// (communication, DP sync and OPTIM added).
enum class Expect { ComputeOnly, Lowered };

/// A schedule that breaks a rule. what() holds the rule that failed, then the rank x step grid
/// with the failing action(s) marked `>like this<`.
class ScheduleError : public std::runtime_error {
 public:
  ScheduleError(const std::string& message, const std::string& grid)
      : std::runtime_error(message + "\n" + grid), message_(message) {}
  /// The rule that failed, without the grid.
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

/// Checks, in this order, and throws ScheduleError at the first failure:
/// - every action's stage and microbatch are in range and every stage runs on exactly one rank
///   per pipeline, the one the layout gives it (stage mod pp);
/// - counts: each stage runs m forwards (one per microbatch), B + I = m, I = W;
/// - order on a rank: F before B or I of the same (stage, microbatch), I before W;
/// - Lowered: every SEND is matched by exactly one RECV on the peer and vice versa, each after
///   its producer and before its consumer; one OPTIM per stage after its compute; layout.zero is
///   0..3, and above 0 only with dp_sync allreduce; with dp > 1 and zero 0 one ALLREDUCE per
///   stage (after its last backward, or after OPTIM for weight-average) and no UNSHARD, RESHARD
///   or REDUCE_GRAD; with dp > 1 and zero > 0 no ALLREDUCE and one REDUCE_GRAD per stage, after
///   its last backward and before its OPTIM, plus for zero 1 and 2 one UNSHARD after OPTIM and no
///   RESHARD, for zero 3 UNSHARD and RESHARD alternating from UNSHARD, every F, B, I and W of the
///   stage between an UNSHARD and its RESHARD, and the step ending resharded (with zero3_gather
///   layer: one REDUCE_GRAD per microbatch, a backward between two, the last after the last
///   backward, and one UNSHARD per F, B, I and W); with dp = 1 no
///   data-parallel actions; ComputeOnly: no communication, sync or optimizer actions at all;
/// - the unit-time dry run finishes (no deadlock).
void validate(const Schedule& schedule, Expect expect);

/// Renders rank rows "rank R: 0F0 0F1 ..." with the actions at (rank, index) in `marks` shown as
/// `>0F1<`. Long lists are cut to a window around the first mark.
std::string render_grid(const Schedule& schedule, const std::vector<std::pair<int, int>>& marks);

}  // namespace dtwin::sched
