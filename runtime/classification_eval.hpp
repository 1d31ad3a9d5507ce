// An encoder's evaluation on the dev split of its classification set: accuracy and F1, as GLUE
// reports them (F1 of label 1 for two labels, as for MRPC; the mean over labels otherwise).
#pragma once

#include <cstdint>
#include <vector>

#include "models/nn/stage_module.hpp"
#include "runtime/communicator.hpp"
#include "runtime/data/classification_dataset.hpp"

namespace dtwin::rt {

struct ClassificationScores {
  std::int64_t examples = 0;
  double accuracy = 0;  ///< correct / examples
  /// Two labels: F1 of label 1 (2·TP / (2·TP + FP + FN)); more: the mean of each label's F1
  /// (macro F1), a label never true nor predicted counting 0.
  double f1 = 0;
  double majority = 0;  ///< the accuracy of always answering the dev split's commonest label
};

/// Scores of a confusion matrix `confusion` [labels × labels], row = true label, column =
/// predicted, row-major.
ClassificationScores scores_of(const std::vector<std::int64_t>& confusion, int labels);

/// Evaluates `module` (an encoder stage, put in eval mode for the pass and back in train mode)
/// on the dev split: replica `replica` of `dp` takes dev examples [replica·N/dp,
/// (replica+1)·N/dp) in batches of `micro_batch_size`, and the confusion matrices are summed
/// over the world (every process must call it; an encoder's world is its replicas). Throws
/// RankLost when a peer is gone.
ClassificationScores evaluate_classifier(nn::StageModule& module, const ClassificationDataset& data,
                                         int micro_batch_size, int replica, int dp,
                                         Communicator& comm);

}  // namespace dtwin::rt
