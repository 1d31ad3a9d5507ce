// How a scenario cuts its model into pipeline stages and its gradients into data-parallel
// buckets: what the runtime needs to build and synchronise its stages, computed from the
// scenario alone (no cost model). The cost model (models/cost/cost_model.hpp) prices the same
// partition.
#pragma once

#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// The layers of one pipeline stage (a model chunk under interleaving).
struct StageLayers {
  int first_layer = 0;         ///< index of the stage's first transformer layer
  int num_layers = 0;          ///< transformer layers of the stage
  bool has_embedding = false;  ///< stage 0: token (and for gpt2 position) embedding
  bool has_head = false;       ///< last stage: final norm, LM head, cross-entropy
};

/// The first stage of `stage_layers` with 0 layers that is neither the first stage (which holds
/// the embedding) nor the last (the head), and so would hold nothing; -1 when there is none.
int layerless_inner_stage(const std::vector<int>& stage_layers);

struct StagePartition {
  /// Reads model.n_layers, layout.pp, virtual_stages, stage_layers, dp, bucket_size and
  /// training.grad_precision. Throws std::invalid_argument (a bug: validate() refuses such
  /// scenarios) when the stage_layers list does not have pp · virtual_stages entries summing to
  /// n_layers or has a layerless_inner_stage, or when pp · virtual_stages does not divide
  /// n_layers without one.
  explicit StagePartition(const Scenario& scenario);

  /// pp · virtual_stages stages in stage order (sched::Layout::pipeline_rank_of_stage places them):
  /// the layout.stage_layers list, or n_layers / stages layers each.
  std::vector<StageLayers> stages;
  /// Gradients per data-parallel bucket, in parameters: layout.bucket_size bytes at the gradient
  /// precision's element size, or by default Megatron-LM's max(4e7, 1e6·dp·cp) (its
  /// DistributedDataParallel bucket rule).
  double bucket_params = 0;

  /// Stage `s` in [0, stages.size()); throws std::out_of_range otherwise.
  const StageLayers& stage(int s) const;
};

}  // namespace dtwin
