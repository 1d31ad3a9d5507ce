// Gradient buckets reduced while the backward runs (Megatron-LM's overlap_grad_reduce, PyTorch
// DDP's buckets; Li et al. 2020, "PyTorch Distributed", §3.2.3): a stage's parameters are
// grouped, in the reverse of their registration order (the order the backward produces their
// gradients), into buckets of about `bucket_elements` elements. While armed, a bucket's
// collective is posted as soon as autograd has accumulated every gradient in it (a
// post-accumulate-grad hook on each parameter), so it runs on c10d's threads under the rest of
// the backward; finish() waits for them. What the collective is (an all-reduce of a copy, or a
// reduce-scatter into a ZeRO shard) is the armed BucketReduction's (bucket_reductions.hpp).
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace dtwin::rt {

class GradientBuckets;

/// The collective of a bucket, and what is done with the results once all have completed.
class BucketReduction {
 public:
  virtual ~BucketReduction() = default;
  /// Posts the collective of bucket `bucket` of `buckets` (its gradients are complete) and
  /// returns its work.
  virtual c10::intrusive_ptr<c10d::Work> post(const GradientBuckets& buckets,
                                              std::size_t bucket) = 0;
  /// Called once every bucket's work has completed: puts the reduced gradients where the
  /// optimizer reads them.
  virtual void complete(const GradientBuckets& buckets) = 0;
};

class GradientBuckets {
 public:
  /// Waits for a posted work (throwing when a peer is lost).
  using Wait = std::function<void(const c10::intrusive_ptr<c10d::Work>&)>;

  /// Buckets `parameters` (leaf tensors, fp32) into runs of at least one parameter and at most
  /// `bucket_elements` elements where possible, last parameter first.
  GradientBuckets(std::vector<torch::Tensor> parameters, double bucket_elements);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  /// Installs the hooks: from now until finish(), each bucket is posted by `reduction` once the
  /// backward has accumulated all its gradients. Call before the stage's last backward of the
  /// step.
  void arm(std::unique_ptr<BucketReduction> reduction);
  bool armed() const { return reduction_ != nullptr; }
  /// Posts every bucket not posted yet (its gradients were written outside autograd, e.g. by a
  /// zero-bubble W, or some parameter got none: its gradient counts as zeros).
  void post_remaining();
  /// Posts what is left, waits for every bucket with `wait`, lets the reduction complete and
  /// removes the hooks.
  void finish(const Wait& wait);

  int bucket_count() const { return static_cast<int>(buckets_.size()); }
  /// Buckets posted since arm(), by the hooks or post_remaining().
  int posted_count() const;
  /// The parameters of bucket `bucket`, last registered first.
  const std::vector<torch::Tensor>& parameters(std::size_t bucket) const {
    return buckets_.at(bucket).parameters;
  }
  /// Elements [first, end) that bucket `bucket` covers in the parameters concatenated in
  /// registration order (bucket 0 ends at the total).
  std::pair<int64_t, int64_t> range(std::size_t bucket) const {
    const Bucket& b = buckets_.at(bucket);
    return {b.first, b.end};
  }

 private:
  struct Bucket {
    std::vector<torch::Tensor> parameters;
    int64_t first = 0, end = 0;
    int accumulated = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };
  void accumulated(std::size_t bucket);
  void post(std::size_t bucket);
  void remove_hooks();

  std::vector<Bucket> buckets_;
  std::unique_ptr<BucketReduction> reduction_;
};

}  // namespace dtwin::rt
