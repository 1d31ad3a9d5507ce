#include "runtime/zero_stage.hpp"

#include <ATen/native/Resize.h>
#if DTWIN_HAVE_CUDA
#include <ATen/native/cuda/Resize.h>
#endif

#include <algorithm>
#include <stdexcept>
#include <string>

#include "runtime/fused_adamw.hpp"

namespace dtwin::rt {
namespace {

// Reallocates t's storage to `bytes` (keeping the leading bytes), on the storage's device.
void resize_storage(const torch::Tensor& t, std::size_t bytes) {
#if DTWIN_HAVE_CUDA
  if (t.is_cuda()) {
    at::native::resize_bytes_cuda(t.storage().unsafeGetStorageImpl(), bytes);
    return;
  }
#endif
  at::native::resize_bytes_cpu(t.storage().unsafeGetStorageImpl(), bytes);
}

std::size_t storage_bytes(const torch::Tensor& t) {
  return t.defined() ? t.storage().nbytes() : 0;
}

}  // namespace

std::size_t adamw_state_bytes(const torch::optim::AdamW& optimizer) {
  std::size_t bytes = 0;
  for (const auto& [key, state] : optimizer.state()) {
    const auto& adam = static_cast<const torch::optim::AdamWParamState&>(*state);
    bytes += storage_bytes(adam.exp_avg()) + storage_bytes(adam.exp_avg_sq()) +
             storage_bytes(adam.max_exp_avg_sq());
  }
  return bytes;
}

ZeroStage::ZeroStage(nn::StageModule& module, int zero, int dp, int replica,
                     const torch::optim::AdamWOptions& options)
    : zero_(zero), dp_(dp), replica_(replica) {
  if (zero < 1 || zero > 3) throw std::invalid_argument("ZeroStage: ZeRO stage must be 1..3");
  if (dp < 1 || replica < 0 || replica >= dp)
    throw std::invalid_argument("ZeroStage: replica " + std::to_string(replica) +
                                " outside a group of " + std::to_string(dp));
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parameters = module.parameters();
  int64_t elements = 0;
  for (const torch::Tensor& p : parameters) elements += p.numel();
  shard_elements_ = (elements + dp - 1) / dp;
  full_ = torch::zeros({shard_elements_ * dp},
                       torch::TensorOptions(torch::kFloat32).device(parameters.at(0).device()));
  full_grad_ = torch::zeros_like(full_);
  int64_t offset = 0;
  for (torch::Tensor& p : parameters) {
    const int64_t n = p.numel();
    full_.narrow(0, offset, n).copy_(p.reshape(-1));
    p.set_data(full_.narrow(0, offset, n).view(p.sizes()));
    p.mutable_grad() = full_grad_.narrow(0, offset, n).view(p.sizes());
    offset += n;
  }
  shard_ = full_.narrow(0, replica * shard_elements_, shard_elements_).detach();
  if (zero == 3) {
    shard_ = shard_.clone();
    release_parameters();
  }
  if (zero >= 2) resize_storage(full_grad_, 0);
  optimizer_ = std::make_unique<FusedAdamW>(std::vector<torch::Tensor>{shard_}, options);
}

bool ZeroStage::gathered() const {
  return storage_bytes(full_) > 0;
}

void ZeroStage::allocate_parameters() {
  if (!gathered()) resize_storage(full_, full_.numel() * full_.element_size());
}

void ZeroStage::release_parameters() {
  if (zero_ == 3) resize_storage(full_, 0);
}

void ZeroStage::prepare_gradients() {
  if (storage_bytes(full_grad_) > 0) return;
  resize_storage(full_grad_, full_grad_.numel() * full_grad_.element_size());
  full_grad_.zero_();
}

void ZeroStage::keep_gradient_shard(const torch::Tensor& reduced) {
  if (reduced.numel() != shard_elements_)
    throw std::invalid_argument("ZeroStage: a gradient shard of " +
                                std::to_string(reduced.numel()) + " elements, expected " +
                                std::to_string(shard_elements_));
  torch::NoGradGuard no_grad;
  if (zero_ == 1) {
    torch::Tensor own = full_grad_.narrow(0, replica_ * shard_elements_, shard_elements_);
    own.copy_(reduced / dp_);
    shard_.mutable_grad() = own.detach();
  } else {
    shard_.mutable_grad() = reduced / dp_;
    resize_storage(full_grad_, 0);
  }
}

std::vector<torch::Tensor> ZeroStage::gradient_shard_views(
    const std::vector<torch::Tensor>& parameters) {
  const int64_t shard_first = replica_ * shard_elements_;
  std::vector<torch::Tensor> views;
  for (const torch::Tensor& p : parameters) {
    if (!p.storage().is_alias_of(full_.storage()))
      throw std::invalid_argument("ZeroStage: a tensor outside the stage's parameter buffer");
    const int64_t first = std::max(p.storage_offset(), shard_first);
    const int64_t end = std::min(p.storage_offset() + p.numel(), shard_first + shard_elements_);
    if (end > first) views.push_back(shard_.grad().narrow(0, first - shard_first, end - first));
  }
  return views;
}

void ZeroStage::step() {
  optimizer_->step();
  torch::NoGradGuard no_grad;
  shard_.mutable_grad() = torch::Tensor();
  if (zero_ == 1) full_grad_.zero_();
}

std::size_t ZeroStage::model_state_bytes() const {
  std::size_t bytes = storage_bytes(full_) + storage_bytes(full_grad_);
  if (zero_ == 3) bytes += storage_bytes(shard_);
  if (zero_ >= 2) bytes += storage_bytes(shard_.grad());
  return bytes + adamw_state_bytes(*optimizer_);
}

}  // namespace dtwin::rt
