#include "runtime/cpu_tensor_memory.hpp"

#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <mutex>

namespace dtwin::rt {
namespace {

std::atomic<std::size_t> live{0};
std::atomic<std::size_t> peak{0};

// What a counted allocation carries to its deleter: the wrapped allocation and its size.
struct Counted {
  c10::DataPtr inner;
  std::size_t bytes;
};

void release(void* context) {
  auto* counted = static_cast<Counted*>(context);
  live.fetch_sub(counted->bytes, std::memory_order_relaxed);
  delete counted;  // frees the storage through the wrapped allocator's deleter
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(std::size_t n) override {
    c10::DataPtr inner = base_->allocate(n);
    void* data = inner.get();
    const c10::Device device = inner.device();
    const std::size_t now = live.fetch_add(n, std::memory_order_relaxed) + n;
    for (std::size_t seen = peak.load(std::memory_order_relaxed);
         now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed);) {
    }
    return {data, new Counted{std::move(inner), n}, &release, device};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  c10::Allocator* base_;
};

}  // namespace

void count_cpu_tensor_bytes() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    // Owned by LibTorch from here on (SetCPUAllocator's contract); priority 1 outranks the
    // default allocator's registration.
    c10::SetCPUAllocator(new CountingAllocator(c10::GetDefaultCPUAllocator()), 1);
  });
}

std::size_t live_cpu_tensor_bytes() {
  return live.load(std::memory_order_relaxed);
}

std::size_t peak_cpu_tensor_bytes() {
  return peak.load(std::memory_order_relaxed);
}

}  // namespace dtwin::rt
