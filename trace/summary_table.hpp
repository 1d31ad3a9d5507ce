// The compact stdout table of a step summary, which `dtwin simulate` prints.
#pragma once

#include <string>

#include "trace/timeline.hpp"

namespace dtwin::trace {

/// A headline (step time, bubble, tokens/s, MFU) then one row per action list of the schedule
/// (compute, exposed communication, idle in ms; peak memory in GiB per rank; memory_ok), in rank
/// order: with `tp` = 1 a row is one rank, with tp > 1 one tensor-parallel group, labelled with
/// its ranks ("4-7": group g holds ranks g·tp .. g·tp + tp - 1). More than `max_rows` rows are cut
/// to the first and last max_rows/2 with "..." where rows are left out, the slowest row always
/// shown.
std::string format_summary_table(const StepSummary& summary, const std::string& title, int tp = 1,
                                 int max_rows = 16);

}  // namespace dtwin::trace
