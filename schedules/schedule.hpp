// A schedule: the layout of a (possibly hybrid DP x PP) job and one ordered action list per rank.
//
// Names used across dtwin (schedules/, sim/, runtime/, trace/):
//   rank           global process index, 0 .. world_size-1 (world_size = dp x pp);
//   replica        one copy of the whole pipeline; there are dp replicas;
//   dp_index       which replica a rank belongs to, 0 .. dp-1 (rank % dp);
//   pipeline rank  a rank's position in its replica's pipeline, 0 .. pp-1 (rank / dp); the
//                  ranks of one pipeline rank across replicas form a data-parallel group;
//   stage          one contiguous slice of the model's layers, 0 .. pp x v - 1; stage s runs on
//                  pipeline rank s % pp (Megatron-LM's interleaved placement);
//   virtual stage  one of the v stages (model chunks) a pipeline rank holds, s / pp;
//   microbatch     one slice of a replica's batch, 0 .. microbatches-1, moved through the stages;
//   step           one training iteration: every microbatch's forward and backward, the DP sync
//                  and one optimizer step; traces number steps from 0.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/name_table.hpp"
#include "schedules/action.hpp"

namespace dtwin::sched {

/// How the data-parallel replicas of a stage combine their work each step.
enum class DpSync {
  AllReduce,      ///< ring all-reduce of the gradients before the optimizer step
  GatherScatter,  ///< DP rank 0 gathers the gradients, averages them, scatters the mean
  WeightAverage,  ///< each replica steps alone, then the parameters are averaged
};

inline constexpr NameTable<DpSync, 3> kDpSyncNames{{{
    {"allreduce", DpSync::AllReduce},
    {"gather-scatter", DpSync::GatherScatter},
    {"weight-average", DpSync::WeightAverage},
}}};

/// The schedule generators (see schedules/generators.hpp), as layout.schedule names them.
enum class ScheduleKind { GPipe, OneFOneB, Interleaved1F1B, ZbH1 };

inline constexpr NameTable<ScheduleKind, 4> kScheduleKindNames{{{
    {"gpipe", ScheduleKind::GPipe},
    {"1f1b", ScheduleKind::OneFOneB},
    {"interleaved-1f1b", ScheduleKind::Interleaved1F1B},
    {"zb-h1", ScheduleKind::ZbH1},
}}};

/// Shape of a job. Stage s of v*pp stages runs on pipeline rank s mod pp. A schedule rank puts
/// the pipeline dimension outermost, as Megatron-LM and torchtitan do: rank = pipeline_rank*dp +
/// dp. Each schedule rank is a tensor-parallel group of tp processes (GPUs) that run its actions
/// together on their shards; processes are ordered tp innermost, then dp, then pp (Megatron-LM's
/// order): process = rank*tp + tp_index.
struct Layout {
  int dp = 1;
  int pp = 1;
  int virtual_stages = 1;
  int microbatches = 1;
  DpSync dp_sync = DpSync::AllReduce;
  /// ZeRO stage 0..3 over the data-parallel group: 0 all-reduces the gradients, 1 and 2 shard
  /// the optimizer state (and gradients), 3 also the parameters (FSDP full sharding). Needs
  /// dp_sync all-reduce when above 0.
  int zero = 0;
  /// Tensor-parallel members per schedule rank.
  int tp = 1;

  int num_stages() const { return pp * virtual_stages; }
  /// Schedule ranks (action lists): dp*pp.
  int world_size() const { return dp * pp; }
  /// Processes that execute the schedule: dp*pp*tp.
  int process_count() const { return world_size() * tp; }
  int schedule_rank(int process) const { return process / tp; }
  int tp_index(int process) const { return process % tp; }
  int process(int schedule_rank, int tp_index) const { return schedule_rank * tp + tp_index; }
  int pipeline_rank_of_stage(int stage) const { return stage % pp; }
  int pipeline_rank(int rank) const { return rank / dp; }
  int dp_index(int rank) const { return rank % dp; }
  int rank(int dp_index, int pipeline_rank) const { return pipeline_rank * dp + dp_index; }
  /// Global rank that runs `stage` in the replica of the rank `same_replica_as`.
  int rank_of_stage(int stage, int same_replica_as) const {
    return rank(dp_index(same_replica_as), pipeline_rank_of_stage(stage));
  }
};

using ActionList = std::vector<Action>;

struct Schedule {
  std::string name;  ///< generator that produced it, e.g. "1f1b"
  Layout layout;
  std::vector<ActionList> ranks;  ///< one list per global rank, in execution order
};

/// Builds the dp-replicated schedule from the action lists of one pipeline (pp lists).
Schedule replicate_pipeline(std::string name, const Layout& layout,
                            const std::vector<ActionList>& pipeline);

}  // namespace dtwin::sched
