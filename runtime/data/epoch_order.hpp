// The order in which a training set's examples are read: an endless stream of epochs, each a
// seeded permutation of the examples, and the stream positions of each replica's microbatches.
// Shared by the corpus (TokenDataset) and the classification sets (ClassificationDataset).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace dtwin::rt {

class EpochOrder {
 public:
  /// Over `examples` (>= 1) examples; `owner` names the data set in errors.
  EpochOrder(std::int64_t examples, const char* owner);

  /// The example at stream position `position` (>= 0): epoch e = position / N is a permutation
  /// of all N examples seeded by (seed, e), and position p holds perm_{p / N}[p % N]. The
  /// shuffle is Fisher-Yates driven by std::mt19937_64 with unbiased rejection sampling, so the
  /// order is the same on every platform and standard library. Safe from several threads.
  std::int64_t at(std::int64_t position, std::uint64_t seed) const;

  /// The stream position of the first example of microbatch `microbatch` of replica `replica`
  /// at training step `step`: step t's global batch is positions [t·G, t·G + G) with
  /// G = dp · microbatches · micro_batch_size, and replica d, microbatch j reads the
  /// micro_batch_size positions from t·G + (d · microbatches + j) · micro_batch_size. So dp
  /// replicas read disjoint data, and one rank with dp · microbatches microbatches reads the same
  /// examples in the same order. Throws UserError naming `owner` for an argument out of range.
  std::int64_t first_position(std::int64_t step, int replica, int microbatch, int dp,
                              int microbatches, int micro_batch_size) const;

  /// Throws UserError "OWNER: WHAT = VALUE is outside [LO, HI)" unless lo <= value < hi.
  void check_range(const char* what, std::int64_t value, std::int64_t lo, std::int64_t hi) const;

 private:
  std::shared_ptr<const std::vector<std::int64_t>> permutation(std::uint64_t seed,
                                                               std::int64_t epoch) const;

  std::int64_t examples_;
  const char* owner_;
  mutable std::mutex mutex_;  ///< guards permutations_
  mutable std::map<std::pair<std::uint64_t, std::int64_t>,
                   std::shared_ptr<const std::vector<std::int64_t>>>
      permutations_;
};

}  // namespace dtwin::rt
