// The collectives of gradient buckets (gradient_buckets.hpp) over a data-parallel group: an
// all-reduce of each bucket's gradients (PyTorch DDP, Megatron-LM without the distributed
// optimizer), or, under ZeRO, a reduce-scatter of each bucket's range of the flat gradient
// buffer into the replicas' shards (Megatron-LM's distributed optimizer, PyTorch FSDP).
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <functional>
#include <map>
#include <vector>

#include "runtime/gradient_buckets.hpp"
#include "runtime/zero_stage.hpp"

namespace dtwin::rt {

/// Each bucket's gradients copied into one flat fp32 buffer and summed over the group;
/// complete() leaves every parameter with the mean over `replicas`.
class AllReduceBuckets : public BucketReduction {
 public:
  /// Posts the all-reduce (sum) of the buffers over the DP group and returns its work.
  using Post = std::function<c10::intrusive_ptr<c10d::Work>(std::vector<torch::Tensor>&)>;

  AllReduceBuckets(Post allreduce, int replicas)
      : allreduce_(std::move(allreduce)), replicas_(replicas) {}
  c10::intrusive_ptr<c10d::Work> post(const GradientBuckets& buckets, std::size_t bucket) override;
  void complete(const GradientBuckets& buckets) override;

 private:
  Post allreduce_;
  int replicas_;
  std::map<std::size_t, torch::Tensor> sums_;  // each posted bucket's flat buffer
};

/// Each bucket's range of `zero`'s flat gradient buffer [Ψ'] reduce-scattered in place: replica
/// r receives the sum of the part of the range inside its shard [r·Ψ'/dp, (r+1)·Ψ'/dp), so the
/// parts differ in size (and may be empty); bucket 0, the last parameters, also carries the
/// padding up to Ψ'. complete() keeps the summed shard (ZeroStage::keep_gradient_shard).
/// Requires `buckets` built from the stage's parameters in registration order, which is the
/// order of ZeroStage's buffer.
class ReduceScatterBuckets : public BucketReduction {
 public:
  /// Posts c10d's reduce_scatter (sum): inputs[0][r] goes to replica r, which receives it in
  /// outputs[0]; returns its work.
  using Post = std::function<c10::intrusive_ptr<c10d::Work>(
      std::vector<torch::Tensor>& outputs, std::vector<std::vector<torch::Tensor>>& inputs)>;

  ReduceScatterBuckets(ZeroStage& zero, Post reduce_scatter)
      : zero_(zero), reduce_scatter_(std::move(reduce_scatter)) {}
  c10::intrusive_ptr<c10d::Work> post(const GradientBuckets& buckets, std::size_t bucket) override;
  void complete(const GradientBuckets& buckets) override;

 private:
  struct Part {
    torch::Tensor sum;     // this replica's part of the bucket, summed over the group
    int64_t shard_offset;  // where it goes in the shard
  };
  ZeroStage& zero_;
  Post reduce_scatter_;
  std::map<std::size_t, Part> parts_;
};

}  // namespace dtwin::rt
