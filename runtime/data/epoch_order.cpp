#include "runtime/data/epoch_order.hpp"

#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "base/splitmix64.hpp"
#include "base/user_error.hpp"

namespace dtwin::rt {
namespace {

/// Uniform integer in [0, bound) from a 64-bit generator, by rejection: the same values on every
/// platform (std::uniform_int_distribution's algorithm is implementation-defined).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    const std::uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

}  // namespace

EpochOrder::EpochOrder(std::int64_t examples, const char* owner)
    : examples_(examples), owner_(owner) {
  if (examples < 1) throw std::invalid_argument(std::string(owner) + ": no example to read");
}

void EpochOrder::check_range(const char* what, std::int64_t value, std::int64_t lo,
                             std::int64_t hi) const {
  if (value < lo || value >= hi)
    throw UserError(std::string(owner_) + ": " + what + " = " + std::to_string(value) +
                    " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
}

std::shared_ptr<const std::vector<std::int64_t>> EpochOrder::permutation(std::uint64_t seed,
                                                                         std::int64_t epoch) const {
  const auto key = std::make_pair(seed, epoch);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (auto it = permutations_.find(key); it != permutations_.end()) return it->second;
  }
  auto perm = std::make_shared<std::vector<std::int64_t>>(static_cast<std::size_t>(examples_));
  for (std::int64_t i = 0; i < examples_; ++i) (*perm)[static_cast<std::size_t>(i)] = i;
  std::mt19937_64 rng(splitmix64(splitmix64(seed) ^ static_cast<std::uint64_t>(epoch)));
  for (std::int64_t i = examples_ - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(uniform_below(rng, static_cast<std::uint64_t>(i) + 1));
    std::swap((*perm)[static_cast<std::size_t>(i)], (*perm)[static_cast<std::size_t>(j)]);
  }
  std::lock_guard<std::mutex> guard(mutex_);
  permutations_[key] = perm;
  // Keep a few recent permutations: a step reads at most two epochs.
  while (permutations_.size() > 4) {
    auto victim = permutations_.begin();
    if (victim->first == key) ++victim;
    permutations_.erase(victim);
  }
  return perm;
}

std::int64_t EpochOrder::at(std::int64_t position, std::uint64_t seed) const {
  check_range("stream position", position, 0, std::numeric_limits<std::int64_t>::max());
  const auto perm = permutation(seed, position / examples_);
  return (*perm)[static_cast<std::size_t>(position % examples_)];
}

std::int64_t EpochOrder::first_position(std::int64_t step, int replica, int microbatch, int dp,
                                        int microbatches, int micro_batch_size) const {
  check_range("dp", dp, 1, kMaxInt);
  check_range("microbatches", microbatches, 1, kMaxInt);
  check_range("micro_batch_size", micro_batch_size, 1, kMaxInt);
  check_range("replica", replica, 0, dp);
  check_range("microbatch", microbatch, 0, microbatches);
  const std::int64_t global = static_cast<std::int64_t>(dp) * microbatches * micro_batch_size;
  check_range("step", step, 0, std::numeric_limits<std::int64_t>::max() / global);
  return step * global +
         (static_cast<std::int64_t>(replica) * microbatches + microbatch) * micro_batch_size;
}

}  // namespace dtwin::rt
