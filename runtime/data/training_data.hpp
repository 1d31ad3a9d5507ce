// What the executor reads its microbatches from: a training set in a seeded epoch order
// (runtime/data/epoch_order.hpp). Two kinds: the language-modelling corpus
// (TokenDataset) and a tokenized classification set (ClassificationDataset).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace dtwin::rt {

/// One microbatch of b = micro_batch_size examples, contiguous CPU int64 tensors:
///  - language modelling: inputs [b, s] token ids, targets [b, s] the inputs shifted by one
///    (targets[i][k] = inputs[i][k + 1]);
///  - classification: inputs [b, 3, s], per example its token ids, token types and attention
///    mask (1 token, 0 padding), targets [b] the label indices.
struct Batch {
  at::Tensor inputs;
  at::Tensor targets;
};

class TrainingData {
 public:
  virtual ~TrainingData() = default;
  /// The micro_batch_size examples of microbatch `microbatch` of DP replica `replica` at
  /// training step `step` (EpochOrder::first_position's stream positions, read through
  /// EpochOrder::at with `seed`). Throws UserError for an argument out of range.
  virtual Batch batch(std::int64_t step, int replica, int microbatch, int dp, int microbatches,
                      int micro_batch_size, std::uint64_t seed) const = 0;
};

}  // namespace dtwin::rt
