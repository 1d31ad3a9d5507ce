// The compare step shared by `dtwin compare` and `dtwin run`.
#pragma once

#include <string>

#include "trace/compare.hpp"

namespace dtwin {

/// Reads DIR/predicted.{trace,summary}.json and DIR/measured.{trace,summary}.json, compares
/// them (trace::compare_timelines), writes DIR/compare.json and DIR/report.md and prints the
/// table. Throws UserError naming the file for a missing or malformed input, or what
/// differs when the two runs are not of the same schedule.
trace::Comparison compare_output_dir(const std::string& dir);

}  // namespace dtwin
