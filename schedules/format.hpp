// Text, CSV and JSON forms of a schedule.
#pragma once

#include <string>

#include "schedules/dry_run.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::sched {

/// One line per rank: "rank R: 0F0 0F1 ...".
std::string to_text(const Schedule& schedule);

/// Parses to_text's form back, one "rank R: ..." line per rank in rank order (blank lines and
/// lines starting with '#' are skipped). Throws UserError naming the line and token
/// on malformed input.
Schedule parse_text(const std::string& text, const std::string& name, const Layout& layout);

/// Header "rank,step,action,stage,kind,microbatch", then one row per action; microbatch is empty
/// for the stage-level kinds (ALLREDUCE, UNSHARD, RESHARD, REDUCE_GRAD, OPTIM).
std::string to_csv(const Schedule& schedule);

/// {"name", "layout": {dp, pp, virtual_stages, microbatches, dp_sync, zero, zero3_gather with zero
/// 3, dp_shard under hybrid sharding, placement "v-shape" for the V schedules}, "ranks":
/// [[actions]]},
/// plus "dry_run": {step_units, bubble_fraction, deadlocked} when `dry` is given.
std::string to_json(const Schedule& schedule, const DryRun* dry = nullptr);

}  // namespace dtwin::sched
