// How a stage's parameters fall into gradient buckets (PyTorch DDP's rule, Li et al. 2020,
// "PyTorch Distributed", §3.2.3): the one partition that the runtime's buckets
// (runtime/gradient_buckets.hpp) and the simulator's byte count both use.
#pragma once

#include <cstdint>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin {

/// The parameters of each bucket, given every parameter's element count in registration order:
/// parameters are taken last first (the order the backward produces their gradients), and a new
/// bucket starts when the next parameter would take a non-empty bucket past `bucket_elements`.
/// Returns the number of parameters in each bucket, the first bucket holding the last
/// parameters; empty for no parameters.
std::vector<int> gradient_bucket_sizes(const std::vector<int64_t>& numels, double bucket_elements);

/// The simulator's gradient buckets of stage `stage` per GPU, where it does not know the
/// parameter tensors: ⌈params / tp / CostModel::bucket_params⌉, at least one, each an equal share.
int even_bucket_count(const Scenario& scenario, const CostModel& cost, int stage);

}  // namespace dtwin
