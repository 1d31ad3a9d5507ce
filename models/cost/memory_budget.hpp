// How many bytes of tensors a rank may hold on its device: the rule by which the planner drops a
// layout and a summary says whether a rank fits.
#pragma once

#include "models/spec/scenario.hpp"

namespace dtwin {

/// Bytes of live tensors one rank may hold: its share of the device's memory
/// (cluster.device.memory / ranks_per_device), less the memory its process holds outside tensors
/// (DeviceDescription::reserved_memory, the CUDA context), times 1 - allocator_fragmentation
/// (free blocks of the caching allocator too fragmented to serve a request; the device files
/// give each value's source). Without a device description (a CPU, or a device given by its
/// peak and memory alone) the whole share. At least 0.
double tensor_memory_per_rank(const ClusterSpec& cluster);

}  // namespace dtwin
