// A tokenized text-classification set, as scripts/tokenize_glue.py writes it: DIR/train.safetensors
// and DIR/dev.safetensors, each with input_ids, token_type_ids and attention_mask [N, S] and
// labels [N], and the label names in the metadata ("labels", comma-separated).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/epoch_order.hpp"
#include "runtime/data/training_data.hpp"

namespace dtwin::rt {

class ClassificationDataset : public TrainingData {
 public:
  /// Reads DIR/train.safetensors and DIR/dev.safetensors. Throws UserError "FILE: what was
  /// expected" for a missing file or tensor, shapes that disagree, a sequence length other than
  /// `seq_len`, a token id outside [0, vocab_size), a label outside [0, num_labels), label names
  /// whose count is not num_labels, or splits with different label names.
  ClassificationDataset(const std::string& dir, int seq_len, int vocab_size, int num_labels);

  std::int64_t train_examples() const { return train_.labels.size(0); }
  std::int64_t dev_examples() const { return dev_.labels.size(0); }
  /// The label names, in label-index order.
  const std::vector<std::string>& labels() const { return labels_; }

  /// Batch::inputs [b, 3, s] (ids, types, mask) and targets [b] of the training split in
  /// EpochOrder's stream.
  Batch batch(std::int64_t step, int replica, int microbatch, int dp, int microbatches,
              int micro_batch_size, std::uint64_t seed) const override;
  /// Dev examples [first, first + count) exactly (first + count <= dev_examples()).
  Batch dev_range(std::int64_t first, std::int64_t count) const;

 private:
  /// The splits as stored (ids, types and mask [N, S] in the file's integer types, labels [N]
  /// int64); a batch widens its rows to int64.
  struct Split {
    at::Tensor ids, types, mask, labels;
  };
  static Batch rows_of(const Split& split, const at::Tensor& rows);
  Split train_, dev_;
  std::vector<std::string> labels_;
  std::unique_ptr<EpochOrder> order_;
};

}  // namespace dtwin::rt
