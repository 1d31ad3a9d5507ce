// Checkpoints: each stage's module and optimizer, saved by DP replica 0 after a step, with a
// manifest per stage that makes a checkpoint verifiable (sizes and CRC-32 checksums). With
// tensor parallelism each member saves its own shards, as Megatron-LM's mp_rank_<i> files do:
// stage-<s>.tp-<i>.pt, .optim.pt and .manifest.json for member i (tp = 1: stage-<s>.pt, ...).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/rank_model.hpp"

namespace dtwin::rt {

/// Writes OUT/checkpoints/step-<steps_done>/stage-<s>.pt and stage-<s>.optim.pt for each of
/// `stages` (under ZeRO, the optimizer of this replica's shard, and the parameters must be
/// gathered), then stage-<s>.manifest.json naming both with their sizes (bytes) and CRC-32s;
/// as member `tp_index` of a tensor-parallel group of `tp`, under the member's names.
/// Every file goes through write_file (temporary file, fsync, rename), and the manifest comes
/// last, so a stage without a valid manifest is an interrupted write. Throws std::runtime_error
/// "PATH: cannot write: REASON" (e.g. the disk is full).
void save_checkpoint(const std::string& output_dir, int64_t steps_done,
                     std::map<int, StageState>& stages, int tp_index = 0, int tp = 1);

/// The checkpoint a resumed run starts from: the newest step directory whose `num_stages` (times
/// `tp` members) manifests exist and whose files match them byte count and CRC-32 for CRC-32.
struct CheckpointChoice {
  std::optional<int64_t> steps_done;  ///< nullopt when no checkpoint is complete
  std::string directory;              ///< OUT/checkpoints/step-<steps_done>, when found
  /// One line per newer checkpoint that was passed over: "FILE: why" (missing manifest,
  /// missing file, size or checksum mismatch).
  std::vector<std::string> skipped;
};

/// Scans OUT/checkpoints/step-* from the newest and verifies each against its manifests.
CheckpointChoice latest_checkpoint(const std::string& output_dir, int num_stages, int tp = 1);

/// Loads `stages` from the checkpoint of `steps_done`, member `tp_index`'s files of `tp`.
/// Throws std::runtime_error naming the file when one is missing or unreadable.
void load_checkpoint(const std::string& output_dir, int64_t steps_done,
                     std::map<int, StageState>& stages, int tp_index = 0, int tp = 1);

}  // namespace dtwin::rt
