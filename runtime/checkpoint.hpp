// Checkpoints: each stage's module and optimizer, saved by DP replica 0 after a step.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "runtime/rank_model.hpp"

namespace dtwin::rt {

/// Writes OUT/checkpoints/step-<steps_done>/stage-<s>.pt and stage-<s>.optim.pt for each of
/// `stages` (through a temporary file and a rename, so a crash never leaves half a file).
void save_checkpoint(const std::string& output_dir, int64_t steps_done,
                     std::map<int, StageState>& stages);

/// The largest steps_done whose checkpoint holds all `num_stages` stages, or nullopt.
std::optional<int64_t> latest_checkpoint(const std::string& output_dir, int num_stages);

/// Loads `stages` from the checkpoint of `steps_done`. Throws std::runtime_error naming the
/// file when one is missing or unreadable.
void load_checkpoint(const std::string& output_dir, int64_t steps_done,
                     std::map<int, StageState>& stages);

}  // namespace dtwin::rt
