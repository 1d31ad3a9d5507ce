// What a rank's MoE layers counted in a step (models/nn/moe.hpp): the token copies each expert
// computed and the copies routed to it, summed over the data-parallel replicas, which step the
// sigmoid routers' expert biases and become OUT/tokens_per_expert.csv.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/communicator.hpp"
#include "runtime/rank_model.hpp"

namespace dtwin::rt {

/// One row of tokens_per_expert.csv: in step `step` (from 1), layer `layer`'s expert `expert`
/// computed `tokens` token copies of the whole global batch, and `load` were routed to it (more
/// than `tokens` where the capacity dropped some).
struct ExpertCount {
  std::int64_t step = 0;
  int layer = 0, expert = 0;
  std::int64_t tokens = 0, load = 0;
};

/// The worst microbatch's load imbalance on this process since its MoE layers' counts were last
/// reset (StepSummary::peak_load_imbalance): per stage and microbatch (the i-th forward of each
/// of the stage's MoE layers), the copies its expert-parallel member received over the copies it
/// sent, its MoE layers together; the largest. 0 without expert parallelism.
double peak_member_imbalance(std::map<int, StageState>& stages);

/// After step `step` (from 0): sums every MoE layer's counts of this process's `stages` over the
/// data-parallel group (an all-reduce every replica joins), steps the sigmoid routers' biases
/// with the summed load, zeroes the counts and returns the rows (none for a dense model). Throws
/// RankLost when a replica is gone.
std::vector<ExpertCount> finish_expert_counts(std::map<int, StageState>& stages, Communicator& comm,
                                              std::int64_t step);

/// The measured load imbalance of `rows` (StepSummary::load_imbalance): per MoE layer and step
/// from `first_step` on, the busiest of the `ep` expert-parallel members' computed copies (member
/// m holds experts [m·E/ep, (m+1)·E/ep)) over the members' mean, averaged. 0 without rows from
/// first_step on or with ep 1.
double measured_load_imbalance(const std::vector<ExpertCount>& rows, int ep,
                               std::int64_t first_step);

/// The rows as JSON ([[step, layer, expert, tokens, load], ...]) and back.
nlohmann::json to_json(const std::vector<ExpertCount>& rows);
std::vector<ExpertCount> expert_counts_from_json(const nlohmann::json& rows);

/// Writes `rows` to OUTPUT_DIR/tokens_per_expert.csv (step,layer,expert,tokens,load; sorted by
/// step, layer and expert); writes nothing when there are none.
void write_expert_counts(std::vector<ExpertCount> rows, const std::string& output_dir);

}  // namespace dtwin::rt
