#include "runtime/rank_device.hpp"

#include <torch/cuda.h>

#include <stdexcept>
#include <string>

#include "base/user_error.hpp"

#include "runtime/clock.hpp"

#if DTWIN_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include "runtime/cuda/event_timer.hpp"
#endif

namespace dtwin::rt {

int gpu_of_local_rank(Backend backend, int local_rank, int local_ranks, int gpus) {
  if (gpus < 1)
    throw UserError(
        "runtime.device: expected cuda on a host with a GPU, got cuda and no GPU visible to "
        "this process (a CUDA build of dtwin, a driver and CUDA_VISIBLE_DEVICES are needed)");
  if (backend == Backend::Nccl && local_ranks > gpus)
    throw UserError("runtime.backend: expected gloo for " + std::to_string(local_ranks) +
                    " ranks on a host with " + std::to_string(gpus) +
                    " GPU(s), got nccl (NCCL runs one rank per GPU; Gloo lets ranks share one)");
  return local_rank % gpus;
}

int visible_gpus() {
#if DTWIN_HAVE_CUDA
  return static_cast<int>(torch::cuda::device_count());
#else
  return 0;
#endif
}

torch::Device rank_device(const RuntimeSpec& runtime, const RankEnv& env) {
  if (runtime.device == RuntimeDevice::Cpu) return torch::kCPU;
  return use_gpu(
      gpu_of_local_rank(runtime.backend, env.local_rank, env.local_world_size, visible_gpus()));
}

torch::Device use_gpu(int index) {
#if DTWIN_HAVE_CUDA
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(index)};
#else
  throw std::logic_error("GPU " + std::to_string(index) + " asked of a build without CUDA");
#endif
}

double device_seconds(const torch::Device& device, const std::function<void()>& body) {
#if DTWIN_HAVE_CUDA
  if (device.is_cuda()) return cuda::stream_seconds(body);
#endif
  const double start = wall_seconds();
  body();
  return wall_seconds() - start;
}

void synchronize(const torch::Device& device) {
#if DTWIN_HAVE_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)device;
#endif
}

void release_cached_memory(const torch::Device& device) {
#if DTWIN_HAVE_CUDA
  if (device.is_cuda()) {
    c10::cuda::device_synchronize();
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
#else
  (void)device;
#endif
}

}  // namespace dtwin::rt
