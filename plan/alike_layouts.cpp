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

// dp, cp and micro_batch_size split a step's sequences between the batch and the sequence: with
// the same dp·cp and the same tokens per rank per microbatch they give every rank the same work.
const std::vector<std::string> kBatchSplitSettings = {"dp", "cp", "micro_batch_size"};

// Tokens a rank holds per microbatch: micro_batch_size · seq_len / cp (cp divides seq_len).
long long tokens_per_rank(const Scenario& scenario) {
  const LayoutSpec& l = scenario.layout;
  return static_cast<long long>(l.micro_batch_size) * scenario.model.seq_len / l.cp;
}

bool within_tolerance(double a, double b) {
  return std::abs(a - b) < kAlikeTolerance * std::max(a, b);
}

// The layout's settings other than the minor ones, with dp, cp and micro_batch_size as the work
// they give a rank (dp·cp, tokens_per_rank), as text: layouts alike share it.
std::string major_settings(const Scenario& scenario) {
  const LayoutSpec& l = scenario.layout;
  return fmt::format("{} {} {} {} {} {} {} {} {} {} {}", l.tp, l.pp, l.dp * l.cp,
                     tokens_per_rank(scenario), l.microbatches, static_cast<int>(l.schedule),
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
  const auto minor_or_split = [](const std::string& name) {
    return std::ranges::find(kMinorSettings, name) != kMinorSettings.end() ||
           std::ranges::find(kBatchSplitSettings, name) != kBatchSplitSettings.end();
  };
  return within_tolerance(a.estimate.step_s, b.estimate.step_s) &&
         within_tolerance(std::ranges::max(a.estimate.peak_bytes),
                          std::ranges::max(b.estimate.peak_bytes)) &&
         std::ranges::all_of(differing_settings(a.scenario, b.scenario), minor_or_split) &&
         major_settings(a.scenario) == major_settings(b.scenario);
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
