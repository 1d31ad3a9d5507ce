// Lowered schedules that the transfer and send-release tests walk: every generator, one and
// several replicas, several pp and v, each with its kind's placement.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "schedules/generators.hpp"
#include "schedules/lowering.hpp"

namespace dtwin::test {

/// (generator name, layout given to generate()).
inline const std::vector<std::pair<std::string, sched::Layout>>& lowered_cases() {
  static const std::vector<std::pair<std::string, sched::Layout>> cases{
      {"gpipe", {2, 3, 1, 6}},
      {"gpipe", {2, 4, 1, 8}},
      {"1f1b", {1, 2, 1, 4}},
      {"1f1b", {1, 4, 1, 8}},
      {"1f1b", {2, 3, 1, 6}},
      {"1f1b", {2, 4, 1, 8}},
      {"interleaved-1f1b", {1, 2, 2, 4}},
      {"interleaved-1f1b", {1, 4, 3, 8}},
      {"interleaved-1f1b", {2, 3, 2, 6}},
      {"interleaved-1f1b", {2, 4, 2, 8}},
      {"zb-h1", {2, 3, 1, 6}},
      {"zb-h1", {2, 4, 1, 8}},
      {"zb-1p", {2, 4, 1, 8}},
      {"zb-2p", {2, 4, 1, 8}},
      {"zb-2p", {1, 3, 1, 4}},
      {"zb-v", {2, 4, 2, 8}},
      {"zb-v", {1, 3, 2, 4}},
      {"dualpipe-v", {2, 4, 2, 8}},
      {"dualpipe-v", {1, 3, 2, 6}},
  };
  return cases;
}

/// The lowered schedule of the generator `name` on `layout`.
inline sched::Schedule lowered_case(const std::string& name, const sched::Layout& layout) {
  return sched::lower(sched::generate(*sched::kScheduleKindNames.parse(name), layout));
}

}  // namespace dtwin::test
