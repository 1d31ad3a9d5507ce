// One rank's training run: model, data, process groups, executor, progress, checkpoints and the
// measured timeline.
#pragma once

#include <string>

#include "models/spec/scenario.hpp"
#include "runtime/rank_env.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::rt {

/// Where a training run reads and writes, and what it records besides the defaults.
struct TrainOptions {
  std::string output_dir;         ///< measured.*, loss.csv and checkpoints/ go here
  std::string data_dir = "data";  ///< corpus.txt and the cached tokenizer and tokens
  bool resume = false;            ///< continue from the latest complete checkpoint in output_dir
  /// Append "step,rank,stage,digest" rows to OUT/digests.csv after every step: the digest is
  /// the exact sum and sum of squares of the stage's parameters (hex doubles), so replicas and
  /// runs can be compared bit for bit.
  bool digests = false;
};

/// Trains `scenario` as process env.rank of env.world_size (dp·pp·tp; it executes schedule rank
/// env.rank / tp as member env.rank % tp of its tensor-parallel group), executing `schedule`
/// (lowered and validated) once per step. Member 0 of the last pipeline rank of replica 0 prints
/// a progress line per step and writes loss.csv (step, loss, tokens_per_s, seconds); DP replica
/// 0 checkpoints its stages (each member its shards) every training.checkpoint_every steps and
/// at the end; process 0 gathers every process's events through the store and writes
/// measured.trace.json and measured.summary.json (the summary averages the steps after the
/// first). An encoder also evaluates on its dev split every training.eval_every steps and after
/// the last (OUT/eval.csv: step, accuracy, f1, majority, examples) and DP replica 0 writes the
/// trained classifier as a Hugging Face checkpoint, OUT/hf-checkpoint/ (config.json,
/// model.safetensors, the dataset's tokenizer). The learning rate follows learning_rate()
/// (runtime/lr_schedule.hpp). Returns 0; throws RankLost when a peer is gone.
int train_rank(const Scenario& scenario, const sched::Schedule& schedule, const RankEnv& env,
               const TrainOptions& options);

}  // namespace dtwin::rt
