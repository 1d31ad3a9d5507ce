// Near-duplicate layouts of `dtwin plan`: layouts that differ only in settings whose effect the
// estimate puts within half a percent, or only in how they split the batch between dp, cp and
// micro_batch_size for the same work per rank, grouped so that the ranked list shows distinct
// choices.
#pragma once

#include <string>
#include <vector>

#include "plan/layout_search.hpp"

namespace dtwin {

/// Relative difference of estimated step time and of peak memory under which layouts are alike.
inline constexpr double kAlikeTolerance = 0.005;

/// True when `a` and `b` differ (differing_settings) at most in the minor settings: zero,
/// recompute, sequence_parallel, tp_comm_overlap, overlap_param_gather and dp_shard.
bool differ_in_minor_settings(const Scenario& a, const Scenario& b);

/// True when the estimated step times and peak memories (the highest rank's) of `a` and `b` each
/// differ by less than kAlikeTolerance of the larger, and they differ at most in the minor
/// settings and in dp, cp and micro_batch_size where dp·cp and the tokens per rank per microbatch
/// (micro_batch_size · seq_len / cp) are the same (the same work on every rank: e.g. dp 8 · cp 32
/// · mbs 1 and dp 4 · cp 64 · mbs 2).
bool alike(const LayoutCandidate& a, const LayoutCandidate& b);

/// The group of each of `layouts` (fastest estimate first), numbered from 1 in the order of the
/// groups' first layouts (their leaders): a layout joins the group of the first leader it is
/// alike with (alike), else leads a new group.
std::vector<int> group_alike(const std::vector<const LayoutCandidate*>& layouts);

/// The settings in which `members` differ from `leader`, each named once in the order of
/// differing_settings, joined by ", ".
std::string alike_settings(const LayoutCandidate& leader,
                           const std::vector<const LayoutCandidate*>& members);

}  // namespace dtwin
