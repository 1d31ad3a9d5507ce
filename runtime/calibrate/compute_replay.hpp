// The compute actions of one rank's schedule, run in the schedule's order without communication
// and timed: what `dtwin profile` takes each stage's F, B, I, W, optimizer and gradient
// synchronisation (its work beside the collective) seconds from.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/nn/expert_parallel.hpp"
#include "models/nn/ring_attention.hpp"
#include "models/nn/tensor_parallel.hpp"
#include "models/spec/scenario.hpp"
#include "runtime/data/training_data.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::rt {

/// Seconds of each compute action, keyed by (stage, kind).
using ActionSeconds = std::map<std::pair<int, sched::ActionKind>, std::vector<double>>;

/// What each timed action spent in its tensor-parallel group's collectives.
struct CollectiveTimes {
  ActionSeconds seconds;     ///< wall seconds (TensorParallelGroup::collective_seconds)
  ActionSeconds helper_cpu;  ///< other threads' CPU (collective_helper_cpu_seconds), seconds
};

/// Runs the F, B, I, W and OPTIM actions of `rank` in `schedule` in their order, `warmup`
/// untimed steps then `steps` timed ones, on `device`, and returns the seconds of every timed
/// action (device_seconds: wall time on the CPU, CUDA events on a GPU). Without gradient
/// buckets, an ALLREDUCE times its work on the rank beside the collective (packing the
/// gradients and writing their average back, as Executor::dp_sync does) and a REDUCE_GRAD its
/// work after the reduce-scatter (ZeroStage::keep_gradient_shard), which training's OPTIM does
/// not include.
/// As in training, a microbatch's activations stay alive from its F to its B (or I), its
/// deferred weight gradients from I to W, the first and last stages read their microbatch's
/// tokens inside F, and gradients accumulate until OPTIM (AdamW, then zero_grad; under ZeRO the
/// step of the first replica's shard, as runtime/zero_stage.hpp runs it): each action
/// meets the caches and heap that it meets in training, which timing it in isolation right after
/// its own F would not (a B then finds its activations in cache). Sends, receives and collectives
/// are skipped; non-first stages take a random input. As member `tp` of a tensor-parallel group
/// (size > 1) the stages hold the member's shards and their passes run the group's collectives,
/// so every member replays at once, and `collectives` (when set) receives each timed action's
/// seconds in the group's collectives and the CPU its other threads ran meanwhile, in the same
/// order. As member `ep` of an expert-parallel group (size > 1) the stages hold the member's
/// experts and their all-to-alls count among those collectives; as member `cp` of a
/// context-parallel group (size > 1) they hold the member's tokens and the ring's waits count
/// among them too. Throws
/// std::logic_error if the schedule runs a backward or W before the F or I it needs.
ActionSeconds replay_compute(const Scenario& scenario, const CostModel& cost,
                             const sched::Schedule& schedule, int rank, const TrainingData& data,
                             int warmup, int steps, const nn::TensorParallelGroup& tp = {},
                             CollectiveTimes* collectives = nullptr,
                             torch::Device device = torch::kCPU,
                             const nn::ExpertParallelGroup& ep = {},
                             const nn::ContextParallelGroup& cp = {});

}  // namespace dtwin::rt
