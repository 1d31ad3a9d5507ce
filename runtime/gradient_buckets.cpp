#include "runtime/gradient_buckets.hpp"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>

#include "models/cost/gradient_bucket_sizes.hpp"

namespace dtwin::rt {
namespace {

// Tells its owner that autograd accumulated the gradient of a parameter of bucket `bucket`.
struct BucketHook : torch::autograd::PostAccumulateGradHook {
  BucketHook(std::function<void()> on_accumulated) : on_accumulated(std::move(on_accumulated)) {}
  void operator()(const torch::autograd::Variable& /*parameter*/) override { on_accumulated(); }
  std::function<void()> on_accumulated;
};

}  // namespace

GradientBuckets::GradientBuckets(std::vector<torch::Tensor> parameters, double bucket_elements) {
  std::vector<int64_t> numels;
  int64_t end = 0;
  for (const torch::Tensor& p : parameters) {
    numels.push_back(p.numel());
    end += p.numel();
  }
  auto next = parameters.rbegin();
  for (const int count : gradient_bucket_sizes(numels, bucket_elements)) {
    Bucket& bucket = buckets_.emplace_back();
    bucket.end = end;
    for (int i = 0; i < count; ++i, ++next) {
      bucket.parameters.push_back(*next);
      end -= next->numel();
    }
    bucket.first = end;
  }
}

GradientBuckets::~GradientBuckets() {
  remove_hooks();
}

void GradientBuckets::arm(std::unique_ptr<BucketReduction> reduction) {
  reduction_ = std::move(reduction);
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    for (const torch::Tensor& p : buckets_[b].parameters)
      torch::autograd::impl::set_post_acc_grad_hooks(
          p, std::make_unique<BucketHook>([this, b] { accumulated(b); }));
}

void GradientBuckets::accumulated(std::size_t bucket) {
  Bucket& b = buckets_[bucket];
  if (++b.accumulated == static_cast<int>(b.parameters.size()) && !b.work) post(bucket);
}

void GradientBuckets::post(std::size_t bucket) {
  buckets_[bucket].work = reduction_->post(*this, bucket);
}

int GradientBuckets::posted_count() const {
  return static_cast<int>(std::count_if(buckets_.begin(), buckets_.end(),
                                        [](const Bucket& b) { return bool(b.work); }));
}

void GradientBuckets::post_remaining() {
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    if (!buckets_[b].work) post(b);
}

void GradientBuckets::finish(const Wait& wait) {
  post_remaining();
  for (Bucket& b : buckets_) {
    wait(b.work);
    b.work.reset();
    b.accumulated = 0;
  }
  remove_hooks();
  reduction_->complete(*this);
  reduction_.reset();
}

void GradientBuckets::remove_hooks() {
  for (Bucket& b : buckets_)
    for (const torch::Tensor& p : b.parameters)
      torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

}  // namespace dtwin::rt
