// The counting CPU allocator behind the measured peak memory of CPU runs
// (runtime/cpu_tensor_memory.hpp).
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "runtime/cpu_tensor_memory.hpp"

using namespace dtwin::rt;

TEST_CASE("CPU tensors are counted from allocation to release, with their peak") {
  count_cpu_tensor_bytes();
  count_cpu_tensor_bytes();  // a second call changes nothing
  const std::size_t before = live_cpu_tensor_bytes();
  {
    const torch::Tensor a = torch::ones({1000, 250});  // 1e6 bytes of fp32
    CHECK(live_cpu_tensor_bytes() - before == 1'000'000);
    {
      // An operator's output and autograd's gradient are CPU tensors too.
      const torch::Tensor w = torch::ones({250, 100}, torch::requires_grad());
      const torch::Tensor y = torch::matmul(a, w);  // 1000 x 100
      y.sum().backward();
      // a, y (400000 bytes), w and its gradient (100000 bytes each)
      CHECK(live_cpu_tensor_bytes() - before == 1'000'000 + 400'000 + 2 * 100'000);
    }
    CHECK(live_cpu_tensor_bytes() - before == 1'000'000);
  }
  CHECK(live_cpu_tensor_bytes() == before);
  CHECK(peak_cpu_tensor_bytes() >= before + 1'600'000);
}
