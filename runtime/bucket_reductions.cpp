#include "runtime/bucket_reductions.hpp"

#include <algorithm>

#include "runtime/flat_gradients.hpp"

namespace dtwin::rt {

c10::intrusive_ptr<c10d::Work> AllReduceBuckets::post(const GradientBuckets& buckets,
                                                      std::size_t bucket) {
  torch::Tensor& sum = sums_[bucket] = flat_gradients(buckets.parameters(bucket));
  std::vector<torch::Tensor> buffers{sum};
  return allreduce_(buffers);
}

void AllReduceBuckets::complete(const GradientBuckets& buckets) {
  for (const auto& [bucket, sum] : sums_) set_gradients(buckets.parameters(bucket), sum, replicas_);
  sums_.clear();
}

c10::intrusive_ptr<c10d::Work> ReduceScatterBuckets::post(const GradientBuckets& buckets,
                                                          std::size_t bucket) {
  const int64_t shard = zero_.shard_elements();
  const int replicas = zero_.replicas();
  auto [first, end] = buckets.range(bucket);
  if (bucket == 0) end = shard * replicas;  // the padding after the last parameter
  torch::Tensor& gradients = zero_.full_gradients();
  // Elements [from, to) of the range that lie in replica r's shard.
  const auto part_of = [&](int r) {
    return std::pair{std::clamp(first, r * shard, (r + 1) * shard),
                     std::clamp(end, r * shard, (r + 1) * shard)};
  };
  std::vector<std::vector<torch::Tensor>> inputs(1);
  for (int r = 0; r < replicas; ++r) {
    const auto [from, to] = part_of(r);
    inputs[0].push_back(gradients.narrow(0, from, to - from));
  }
  const int me = zero_.replica();
  const auto [from, to] = part_of(me);
  Part& part = parts_[bucket] = {torch::empty({to - from}, gradients.options()), from - me * shard};
  std::vector<torch::Tensor> outputs{part.sum};
  return reduce_scatter_(outputs, inputs);
}

void ReduceScatterBuckets::complete(const GradientBuckets& /*buckets*/) {
  torch::Tensor reduced = torch::zeros({zero_.shard_elements()}, zero_.full_gradients().options());
  for (const auto& [bucket, part] : parts_)
    reduced.narrow(0, part.shard_offset, part.sum.numel()).copy_(part.sum);
  parts_.clear();
  zero_.keep_gradient_shard(reduced);
}

}  // namespace dtwin::rt
