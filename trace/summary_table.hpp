// The compact stdout table of a step summary, which `dtwin simulate` prints.
#pragma once

#include <string>

#include "trace/timeline.hpp"

namespace dtwin::trace {

/// A headline (step time, bubble, tokens/s, MFU) then one row per rank (compute, exposed
/// communication, idle in ms; peak memory in GiB; memory_ok). More than `max_rows` ranks are cut
/// to the first and last max_rows/2, with the slowest rank's figures always shown.
std::string format_summary_table(const StepSummary& summary, const std::string& title,
                                 int max_rows = 16);

}  // namespace dtwin::trace
