#include "plan/alike_layouts.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace dtwin {
namespace {

const std::vector<std::string> kMinorSettings = {
    "zero",    "recompute", "sequence_parallel", "tp_comm_overlap", "overlap_param_gather",
    "dp_shard"};

bool within_tolerance(double a, double b) {
  return std::abs(a - b) < kAlikeTolerance * std::max(a, b);
}

// The layout's settings other than the minor ones, as text: layouts alike share it.
std::string major_settings(const Scenario& scenario) {
  const LayoutSpec& l = scenario.layout;
  return fmt::format("{} {} {} {} {} {} {} {} {} {} {} {}", l.tp, l.pp, l.dp, l.cp,
                     l.micro_batch_size, l.microbatches, static_cast<int>(l.schedule),
                     l.virtual_stages, l.ep, l.expert_tp(),
                     static_cast<int>(scenario.training.precision),
                     static_cast<int>(scenario.training.fp8_recipe));
}

}  // namespace

bool differ_in_minor_settings(const Scenario& a, const Scenario& b) {
  return std::ranges::all_of(differing_settings(a, b), [](const std::string& name) {
    return std::ranges::find(kMinorSettings, name) != kMinorSettings.end();
  });
}

bool alike(const LayoutCandidate& a, const LayoutCandidate& b) {
  return within_tolerance(a.estimate.step_s, b.estimate.step_s) &&
         within_tolerance(std::ranges::max(a.estimate.peak_bytes),
                          std::ranges::max(b.estimate.peak_bytes)) &&
         differ_in_minor_settings(a.scenario, b.scenario);
}

std::vector<int> group_alike(const std::vector<const LayoutCandidate*>& layouts) {
  std::unordered_map<std::string, std::vector<size_t>> leaders;  // major settings -> leaders
  std::vector<int> group(layouts.size());
  int groups = 0;
  for (size_t i = 0; i < layouts.size(); ++i) {
    std::vector<size_t>& same_major = leaders[major_settings(layouts[i]->scenario)];
    const auto leader =
        std::ranges::find_if(same_major, [&](size_t j) { return alike(*layouts[j], *layouts[i]); });
    if (leader != same_major.end()) {
      group[i] = group[*leader];
      continue;
    }
    same_major.push_back(i);
    group[i] = ++groups;
  }
  return group;
}

std::string alike_settings(const LayoutCandidate& leader,
                           const std::vector<const LayoutCandidate*>& members) {
  std::vector<std::string> names;
  for (const LayoutCandidate* member : members)
    for (const std::string& name : differing_settings(leader.scenario, member->scenario))
      if (std::ranges::find(names, name) == names.end()) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace dtwin
