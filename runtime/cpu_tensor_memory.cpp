#include "runtime/cpu_tensor_memory.hpp"

#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <mutex>

namespace dtwin::rt {
namespace {

std::atomic<std::size_t> live{0};
std::atomic<std::size_t> peak{0};

// Each counted block starts with a header holding the size of the data after it; the header is
// one alignment unit long, so the data keeps c10's CPU alignment. The data pointer is also the
// DataPtr's context, which raw_allocate (used by some CPU kernels, e.g. oneDNN's bf16 paths)
// requires.
constexpr std::size_t kHeader = c10::gAlignment;

void release(void* data) {
  void* block = static_cast<char*>(data) - kHeader;
  live.fetch_sub(*static_cast<std::size_t*>(block), std::memory_order_relaxed);
  c10::free_cpu(block);
}

class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(std::size_t n) override {
    void* block = c10::alloc_cpu(n + kHeader);
    *static_cast<std::size_t*>(block) = n;
    void* data = static_cast<char*>(block) + kHeader;
    const std::size_t now = live.fetch_add(n, std::memory_order_relaxed) + n;
    for (std::size_t seen = peak.load(std::memory_order_relaxed);
         now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed);) {
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

}  // namespace

void count_cpu_tensor_bytes() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    // Owned by LibTorch from here on (SetCPUAllocator's contract); priority 1 outranks the
    // default allocator's registration. It allocates as the default one does (c10::alloc_cpu).
    c10::SetCPUAllocator(new CountingAllocator(), 1);
  });
}

std::size_t live_cpu_tensor_bytes() {
  return live.load(std::memory_order_relaxed);
}

std::size_t peak_cpu_tensor_bytes() {
  return peak.load(std::memory_order_relaxed);
}

}  // namespace dtwin::rt
