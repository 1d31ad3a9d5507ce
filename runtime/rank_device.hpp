// The device a rank computes on: the CPU, or one GPU of its host (runtime.device).
#pragma once

#include <torch/types.h>

#include <functional>

#include "models/spec/scenario.hpp"
#include "runtime/rank_env.hpp"

namespace dtwin::rt {

/// The GPU index of local rank `local_rank` (0 <= local_rank < local_ranks) on a host that shows
/// `gpus` GPUs: local_rank mod gpus, so one rank per GPU when there are enough and, over Gloo,
/// ranks sharing GPUs round-robin otherwise. Throws UserError naming the key: runtime.device
/// when gpus < 1; runtime.backend when `backend` is NCCL and local_ranks > gpus (an NCCL
/// communicator cannot hold two ranks on one GPU).
int gpu_of_local_rank(Backend backend, int local_rank, int local_ranks, int gpus);

/// The GPUs this process sees (0 in a build without CUDA, DTWIN_HAVE_CUDA).
int visible_gpus();

/// This rank's device for the scenario's runtime.device: the CPU, or GPU
/// gpu_of_local_rank(runtime.backend, env.local_rank, env.local_world_size, visible_gpus()), which
/// it makes the process's current CUDA device. Throws UserError as gpu_of_local_rank.
torch::Device rank_device(const RuntimeSpec& runtime, const RankEnv& env);

/// Makes GPU `index` the calling thread's current CUDA device and returns it. Throws
/// std::logic_error in a build without CUDA.
torch::Device use_gpu(int index);

/// Seconds `body` takes on `device`: host wall-clock time on the CPU; on a GPU the time between
/// CUDA events recorded on the current stream before and after it, once the device ran them.
double device_seconds(const torch::Device& device, const std::function<void()>& body);

/// Waits until every kernel queued on `device` has run (cudaDeviceSynchronize); nothing on the
/// CPU.
void synchronize(const torch::Device& device);

/// Hands the CUDA caching allocator's unused blocks on `device` back to the driver
/// (emptyCache), after the device ran what was queued; nothing on the CPU. For a process that
/// keeps running beside others on the same GPU (dtwin run's profile before its ranks train).
void release_cached_memory(const torch::Device& device);

}  // namespace dtwin::rt
