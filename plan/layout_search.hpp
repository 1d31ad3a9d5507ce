// The layout search of `dtwin plan`: every layout of a scenario's model on a number of GPUs for
// a global batch, checked by the schema's validate(), estimated in closed form (estimate_step) and
// filtered by memory.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/cost/step_estimate.hpp"
#include "models/spec/scenario.hpp"
#include "models/spec/validate.hpp"

namespace dtwin {

/// What to search: the base scenario (its model, cluster and switches), the GPUs (schedule
/// ranks × tp) and the global batch in sequences.
struct PlanRequest {
  Scenario base;  ///< the loaded scenario whose model, cluster and switches the layouts keep
  int gpus = 0;
  int global_batch = 0;
  /// Settings held at the base's value: any of "zero", "recompute", "sequence_parallel", "ep"
  /// (layout.ep and layout.etp), "cp" (layout.cp), "dp_shard" (layout.dp_shard) and "precision"
  /// (training.precision).
  std::vector<std::string> keep;
  /// When set, layouts it finds violations in are dropped under "runtime: KEY" (plan --run).
  std::function<std::vector<Violation>(const Scenario&)> check;
};

/// One layout that loads and fits in memory.
struct LayoutCandidate {
  std::vector<std::string> sets;  ///< the layout as `--set` overrides (cluster and layout)
  Scenario scenario;
  StepEstimate estimate;
  double tokens_per_s = 0;  ///< global batch · seq_len / estimate.step_s
};

/// The scenario's own layout (its layout section as given), estimated as the candidates are.
struct InputLayout {
  /// Its estimate (LayoutCandidate::sets empty unless `searched`); nullopt when it cannot be
  /// compared with the search's layouts: another GPU count or global batch (see `why`).
  std::optional<LayoutCandidate> candidate;
  /// Its place among the fitting layouts by the estimate (1 = fastest): where the search kept it,
  /// or where it would stand; 0 when it does not fit or has no candidate.
  size_t rank = 0;
  bool searched = false;  ///< the search kept it: fitting[rank - 1] is the same layout
  /// Why the search did not keep it, a predicate: "does not fit: 83.0 GiB > 67.9 GiB" or "is not
  /// in the search space: ..."; empty when `searched`.
  std::string why;
};

struct LayoutSearch {
  int enumerated = 0;                          ///< layouts tried
  std::vector<LayoutCandidate> fitting;        ///< fastest estimate first
  std::map<std::string, int> dropped;          ///< reason -> layouts dropped for it
  std::map<std::string, std::string> example;  ///< reason -> one full message
  InputLayout input;                           ///< the request's base layout among them
};

/// The searched settings in which the layouts of two scenarios with the same model and cluster
/// differ, by name: tp, pp, dp, cp, micro_batch_size, microbatches, schedule, virtual_stages,
/// zero, recompute, sequence_parallel, tp_comm_overlap, overlap_param_gather, dp_shard (0 unless
/// hybrid), ep, etp (resolved), precision, fp8_recipe; empty for the same layout.
std::vector<std::string> differing_settings(const Scenario& a, const Scenario& b);

/// The layouts of `request`: tp a power of two within a node, pp dividing the GPUs / tp (at most
/// n_layers), dp the rest; micro-batch size 1, 2, 4, 8 or 16 where dp·mbs divides the global
/// batch; schedules gpipe, 1f1b, zb-h1, zb-1p, zb-2p, interleaved-1f1b with every virtual
/// stage count v ≥ 2 that divides n_layers / pp and zb-v where 2·pp divides n_layers (only 1f1b
/// for pp = 1); ZeRO 0–3 (0 for
/// dp = 1); recompute none, selective, full; sequence parallelism off and on (off for tp = 1);
/// for a MoE model, etp 1 and tp and every ep that divides num_experts and dp·tp / etp
/// (Megatron-Core's folding, LayoutSpec::expert_dp); training precision bf16 and fp8 for a dense
/// model whose base trains in bf16 or fp8 on a device description with fp8_flops (MoE with fp8 is
/// refused), else the base's; the request's kept settings at the base's value. Each is the base
/// scenario with the layout's
/// values set through the schema and checked by validate() (violations are counted by the key
/// they name), estimated, and kept when every pipeline rank's peak (the walk of its lowered
/// schedule, zb-1p and zb-2p ordered by the modelled pass times as simulated) fits
/// tensor_memory_per_rank. A base that gives layout.global_batch has it set to the request's.
/// The base's own layout is estimated too and placed among them (LayoutSearch::input).
/// `progress(done, total)` is called as layouts are checked. Throws
/// UserError when no split of the GPUs exists, when the global batch is not a multiple of any
/// dp·mbs, or when no layout loads and fits (naming each reason with its count).
LayoutSearch search_layouts(const PlanRequest& request,
                            const std::function<void(int, int)>& progress);

}  // namespace dtwin
