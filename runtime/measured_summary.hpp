// Rank 0's last job: merge every rank's measured events into the run's trace and summary.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>

#include "models/spec/scenario.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::rt {

/// Reads "events/<process>" ({peak_memory_bytes, model_state_bytes, trace}) of every process of
/// the schedule's `layout` from `store` (waiting for each; a schedule rank's events are its
/// tensor-parallel member 0's, its memory figures its largest member's), and writes
/// OUT/measured.trace.json (all steps) and OUT/measured.summary.json (the simulator's keys,
/// averaged over the steps after the first; tokens_per_s and MFU from the scenario's global batch,
/// peak_flops, device count and model FLOPs (the cost model's, built here); peak memory = the
/// rank's peak bytes of live tensors, runtime/peak_memory.hpp; model states = the most its stages'
/// weights, gradients and optimizer state held at an OPTIM, Executor).
void write_measured(c10d::Store& store, const Scenario& scenario, const sched::Layout& layout,
                    const std::string& output_dir);

}  // namespace dtwin::rt
