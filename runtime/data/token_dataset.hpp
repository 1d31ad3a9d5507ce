// The corpus (the King James Bible) as a stream of tokens, cut into the training and validation
// sequences that each rank reads (see TokenDataset::batch).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/data/epoch_order.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/data/training_data.hpp"

namespace dtwin::rt {

/// data_dir/corpus.txt encoded with ensure_tokenizer(data_dir, vocab_size): every line's ids
/// followed by </s> (id 2), concatenated into one stream (cached in data_dir/tokens-<vocab>.bin).
/// The first 95% of the stream is the training split, the last 5% the validation split; each
/// split is cut into non-overlapping sequences of seq_len + 1 tokens (the remainder is dropped).
/// All methods are const and safe to call from several threads.
class TokenDataset : public TrainingData {
 public:
  /// Throws std::runtime_error when corpus.txt is missing (run scripts/fetch_data.sh), when
  /// vocab_size or seq_len is invalid, or when the training split holds no whole sequence.
  TokenDataset(const std::string& data_dir, int vocab_size, int seq_len);
  ~TokenDataset();
  TokenDataset(const TokenDataset&) = delete;
  TokenDataset& operator=(const TokenDataset&) = delete;

  int64_t train_sequences() const { return train_sequences_; }
  int64_t validation_sequences() const { return validation_sequences_; }
  int vocab_size() const { return vocab_size_; }
  int seq_len() const { return seq_len_; }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens_.size()); }
  const std::string& tokenizer_path() const { return tokenizer_path_; }

  /// The micro_batch_size sequences of microbatch `microbatch` of DP replica `replica` at
  /// training step `step`, in EpochOrder's stream over the training sequences (a step that
  /// straddles an epoch boundary takes the end of one permutation and the start of the next).
  Batch batch(int64_t step, int replica, int microbatch, int dp, int microbatches,
              int micro_batch_size, uint64_t seed) const override;

  /// Validation sequences index * micro_batch_size ... + micro_batch_size - 1, in order, taken
  /// modulo validation_sequences() (any index >= 0 is valid; validation_batches() of them cover
  /// the split once).
  Batch validation_batch(int64_t index, int micro_batch_size) const;
  int64_t validation_batches(int micro_batch_size) const;

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  std::vector<int> encode(const std::string& text) const { return tokenizer_->encode(text); }
  std::string decode(const std::vector<int>& ids) const { return tokenizer_->decode(ids); }

  /// Index of the training sequence at stream position `position` (see batch()).
  int64_t train_sequence_at(int64_t position, uint64_t seed) const;

 private:
  Batch gather(const std::vector<int64_t>& starts) const;

  int vocab_size_;
  int seq_len_;
  std::string tokenizer_path_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int32_t> tokens_;
  int64_t train_tokens_ = 0;  ///< the training split is tokens_[0, train_tokens_)
  int64_t train_sequences_ = 0;
  int64_t validation_sequences_ = 0;
  std::unique_ptr<EpochOrder> order_;  ///< over the training sequences
};

}  // namespace dtwin::rt
