// A schedule: the layout of a DP x PP x TP job and one ordered action list per tensor-parallel
// group.
//
// Names used across dtwin (schedules/, sim/, runtime/, trace/), as Megatron-LM uses them:
//   rank           one process, 0 .. world_size-1; world_size = dp x pp x tp. Ranks are ordered
//                  tp innermost, then dp, then pp: rank = group * tp + tp_index;
//   TP group       the tp ranks that run one action list together, each on its shards of the
//                  stage's layers; group = rank / tp, 0 .. group_count-1 (group_count = dp x pp).
//                  With tp = 1 a group is one rank and the two numbers agree. The schedule's
//                  action lists, the simulator's actors and the summaries' per-row figures are
//                  per group (the parameters named `rank` in schedules/ and sim/ index groups);
//   replica        one copy of the whole pipeline; there are dp replicas;
//   dp_index       which replica a group belongs to, 0 .. dp-1 (group % dp);
//   pipeline rank  a group's position in its replica's pipeline, 0 .. pp-1 (group / dp); the
//                  groups of one pipeline rank across replicas form a data-parallel group;
//   stage          one contiguous slice of the model's layers, 0 .. pp x v - 1; stage s runs on
//                  the pipeline rank Layout::pipeline_rank_of_stage names: s % pp (Megatron-LM's
//                  interleaved placement) or, for the V schedules, s % pp going out and
//                  pp-1 - s % pp coming back (see StagePlacement);
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

/// When ZeRO-3 gathers a stage's parameters (layout.zero3_gather).
enum class Zero3Gather {
  /// Each layer (FSDP unit) just before each F, B, I and W runs, the next prefetched under it,
  /// freed after; gradients reduce-scattered after every microbatch's backward: DeepSpeed ZeRO-3
  /// and PyTorch FSDP/FSDP2 without pipelining.
  Layer,
  /// The whole stage once before the first forward and once before the first backward, held
  /// across the microbatches; gradients reduced once per step: dtwin's runtime, and FSDP2 under
  /// pipeline parallelism with reshard_after_forward=False.
  Stage,
};

inline constexpr NameTable<Zero3Gather, 2> kZero3GatherNames{{{
    {"layer", Zero3Gather::Layer},
    {"stage", Zero3Gather::Stage},
}}};

/// The schedule generators (see schedules/generators.hpp), as layout.schedule names them.
enum class ScheduleKind { GPipe, OneFOneB, Interleaved1F1B, ZbH1, Zb1p, Zb2p, ZbV, DualPipeV };

inline constexpr NameTable<ScheduleKind, 8> kScheduleKindNames{{{
    {"gpipe", ScheduleKind::GPipe},
    {"1f1b", ScheduleKind::OneFOneB},
    {"interleaved-1f1b", ScheduleKind::Interleaved1F1B},
    {"zb-h1", ScheduleKind::ZbH1},
    {"zb-1p", ScheduleKind::Zb1p},
    {"zb-2p", ScheduleKind::Zb2p},
    {"zb-v", ScheduleKind::ZbV},
    {"dualpipe-v", ScheduleKind::DualPipeV},
}}};

/// Where the stages of chunk c (stages c*pp .. c*pp + pp-1) run.
enum class StagePlacement {
  /// Every chunk on pipeline ranks 0 .. pp-1 in order: stage s on rank s % pp (Megatron-LM).
  Interleaved,
  /// Even chunks on ranks 0 .. pp-1, odd chunks back on ranks pp-1 .. 0 (Qi et al. 2024,
  /// "Pipeline Parallelism with Controllable Memory", §3): with v = 2, rank r holds stages r and
  /// 2pp-1 - r, the turn from stage pp-1 to stage pp stays on rank pp-1 and the last stage runs
  /// on rank 0.
  VShape,
};

/// Shape of a job. Stage s of v*pp stages runs on pipeline rank pipeline_rank_of_stage(s). TP
/// groups put the pipeline dimension outermost, as Megatron-LM and torchtitan do: group =
/// pipeline_rank*dp + dp_index. Each group's tp ranks (processes, GPUs) run its actions together on
/// their shards; ranks are ordered tp innermost, then dp, then pp (Megatron-LM's order): rank =
/// group*tp + tp_index.
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
  /// Ranks per TP group (the tensor-parallel degree).
  int tp = 1;
  /// With zero 3: per layer around every compute action, or per stage (see Zero3Gather). Stage
  /// here (the IR's long-standing placement); the scenario key defaults to layer.
  Zero3Gather zero3_gather = Zero3Gather::Stage;
  /// Set by generate() from the schedule kind (its requirements()).
  StagePlacement placement = StagePlacement::Interleaved;
  /// Hybrid sharding (HSDP): the data-parallel indices one ZeRO shard group spans, consecutive
  /// (group k holds dp_index k·dp_shard .. (k+1)·dp_shard - 1); 0 = all dp. With
  /// 0 < dp_shard < dp (dividing dp; zero > 0) the lowering is unchanged, UNSHARD gathers inside
  /// the shard group and REDUCE_GRAD reduce-scatters inside it, then all-reduces the shard across
  /// the dp / dp_shard indices that hold it (dp_index mod dp_shard equal).
  int dp_shard = 0;

  int num_stages() const { return pp * virtual_stages; }
  /// The data-parallel indices of a ZeRO shard group: dp_shard, or dp without hybrid sharding.
  int shard_size() const { return dp_shard > 0 ? dp_shard : dp; }
  /// True under hybrid sharding: 0 < dp_shard < dp.
  bool hybrid_shard() const { return dp_shard > 0 && dp_shard < dp; }
  /// TP groups (action lists): dp*pp.
  int group_count() const { return dp * pp; }
  /// Ranks (processes) that execute the schedule: dp*pp*tp.
  int world_size() const { return group_count() * tp; }
  /// The TP group of `rank`, and the rank's index in it.
  int group_of(int rank) const { return rank / tp; }
  int tp_index(int rank) const { return rank % tp; }
  /// The rank at `tp_index` of TP group `group`.
  int rank_of(int group, int tp_index) const { return group * tp + tp_index; }
  /// The pipeline rank that runs `stage`: the one placement rule (see StagePlacement).
  int pipeline_rank_of_stage(int stage) const {
    return turned(stage / pp) ? pp - 1 - stage % pp : stage % pp;
  }
  /// The stage of chunk `chunk` (0 .. v-1) on `pipeline_rank`: pipeline_rank_of_stage's inverse.
  int stage_of(int pipeline_rank, int chunk) const {
    return chunk * pp + (turned(chunk) ? pp - 1 - pipeline_rank : pipeline_rank);
  }
  /// The pipeline rank that runs the last stage, the one that computes the loss.
  int loss_pipeline_rank() const { return pipeline_rank_of_stage(num_stages() - 1); }
  /// The pipeline rank and the replica of TP group `group`.
  int pipeline_rank(int group) const { return group / dp; }
  int dp_index(int group) const { return group % dp; }
  /// The TP group at (dp_index, pipeline_rank).
  int group(int dp_index, int pipeline_rank) const { return pipeline_rank * dp + dp_index; }
  /// The TP group that runs `stage` in the replica of the group `same_replica_as`.
  int group_of_stage(int stage, int same_replica_as) const {
    return group(dp_index(same_replica_as), pipeline_rank_of_stage(stage));
  }

 private:
  /// Whether chunk `chunk` runs from rank pp-1 back to rank 0.
  bool turned(int chunk) const { return placement == StagePlacement::VShape && chunk % 2 == 1; }
};

using ActionList = std::vector<Action>;

struct Schedule {
  std::string name;  ///< generator that produced it, e.g. "1f1b"
  Layout layout;
  std::vector<ActionList> ranks;  ///< one list per TP group, in execution order
};

/// Why `layout`'s dp_shard is invalid: negative, not dividing dp, or hybrid (below dp) with
/// zero 0; "" when valid.
std::string shard_error(const Layout& layout);

/// Builds the dp-replicated schedule from the action lists of one pipeline (pp lists).
Schedule replicate_pipeline(std::string name, const Layout& layout,
                            const std::vector<ActionList>& pipeline);

}  // namespace dtwin::sched
