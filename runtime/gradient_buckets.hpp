// Gradient buckets all-reduced while the backward runs (Megatron-LM's overlap_grad_reduce,
// PyTorch DDP's buckets; Li et al. 2020, "PyTorch Distributed", §3.2.3): a stage's parameters
// are grouped, in the reverse of their registration order (the order the backward produces
// their gradients), into buckets of about `bucket_elements` elements. While armed, a bucket's
// all-reduce is posted as soon as autograd has accumulated every gradient in it (a
// post-accumulate-grad hook on each parameter), so it runs on c10d's threads under the rest of
// the backward; finish() waits for them and writes the mean back.
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace dtwin::rt {

class GradientBuckets {
 public:
  /// Posts the all-reduce (sum) of one flat fp32 bucket over the DP group and returns its work.
  using Post = std::function<c10::intrusive_ptr<c10d::Work>(std::vector<torch::Tensor>&)>;
  /// Waits for a posted work (throwing when a peer is lost).
  using Wait = std::function<void(const c10::intrusive_ptr<c10d::Work>&)>;

  /// Buckets `parameters` (leaf tensors, fp32) into runs of at least one parameter and at most
  /// `bucket_elements` elements where possible, last parameter first.
  GradientBuckets(std::vector<torch::Tensor> parameters, double bucket_elements);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  /// Installs the hooks: from now until finish(), each bucket is posted with `post` once the
  /// backward has accumulated all its gradients. Call before the stage's last backward of the
  /// step.
  void arm(Post post);
  bool armed() const { return armed_; }
  /// Posts every bucket not posted yet (its gradients were written outside autograd, e.g. by a
  /// zero-bubble W, or some parameter got none: its gradient counts as zeros).
  void post_remaining();
  /// Posts what is left, waits for every bucket with `wait`, divides the sums by `replicas`
  /// into the parameters' gradients and removes the hooks.
  void finish(const Wait& wait, int replicas);

  int bucket_count() const { return static_cast<int>(buckets_.size()); }
  /// Buckets posted since arm(), by the hooks or post_remaining().
  int posted_count() const;

 private:
  struct Bucket {
    std::vector<torch::Tensor> parameters;
    int accumulated = 0;
    torch::Tensor flat;  // the posted sum, while in flight
    c10::intrusive_ptr<c10d::Work> work;
  };
  void accumulated(std::size_t bucket);
  void post(Bucket& bucket);
  void remove_hooks();

  std::vector<Bucket> buckets_;
  Post post_;
  bool armed_ = false;
};

}  // namespace dtwin::rt
