#include "models/spec/stage_partition.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace dtwin {
namespace {

/// Layers per stage, in stage order.
std::vector<int> split_layers(const ModelSpec& m, const LayoutSpec& l) {
  const int stages = l.pp * l.virtual_stages;
  if (stages < 1) throw std::invalid_argument("StagePartition: layout.pp * virtual_stages < 1");
  if (!l.stage_layers.empty()) {
    const int sum = std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), 0);
    if (static_cast<int>(l.stage_layers.size()) != stages || sum != m.n_layers ||
        layerless_inner_stage(l.stage_layers) >= 0) {
      throw std::invalid_argument(
          "StagePartition: layout.stage_layers must have pp*virtual_stages entries summing to "
          "model.n_layers, 0 only for the first or last stage");
    }
    return l.stage_layers;
  }
  if (m.n_layers % stages != 0) {
    throw std::invalid_argument("StagePartition: pp*virtual_stages must divide model.n_layers");
  }
  return std::vector<int>(stages, m.n_layers / stages);
}

}  // namespace

int layerless_inner_stage(const std::vector<int>& stage_layers) {
  for (std::size_t s = 1; s + 1 < stage_layers.size(); ++s)
    if (stage_layers[s] == 0) return static_cast<int>(s);
  return -1;
}

StagePartition::StagePartition(const Scenario& scenario) {
  const std::vector<int> layers = split_layers(scenario.model, scenario.layout);
  int first = 0;
  for (std::size_t s = 0; s < layers.size(); ++s) {
    stages.push_back({first, layers[s], s == 0, s + 1 == layers.size()});
    first += layers[s];
  }
  const LayoutSpec& l = scenario.layout;
  bucket_params = l.bucket_size > 0
                      ? l.bucket_size / element_bytes(scenario.training.grad_precision)
                      : std::max(4e7, 1e6 * l.dp_cp());  // Megatron-Core: its dp_cp group
}

const StageLayers& StagePartition::stage(int s) const {
  if (s < 0 || s >= static_cast<int>(stages.size()))
    throw std::out_of_range("StagePartition::stage: no stage " + std::to_string(s) + " of " +
                            std::to_string(stages.size()));
  return stages[s];
}

}  // namespace dtwin
