// The scenario's settings that take one of a few named values (model.family,
// training.precision, cluster.device.kind, cluster.topology, runtime.backend, runtime.device),
// each with its one table of names. The schedule vocabulary (layout.schedule, layout.dp_sync)
// lives in schedules/schedule.hpp.
#pragma once

#include "schedules/name_table.hpp"

namespace dtwin {

/// model.family: the decoder-only architecture (see ModelSpec).
enum class ModelFamily { Llama, Gpt2 };
inline constexpr NameTable<ModelFamily, 2> kModelFamilyNames{
    {{{"llama", ModelFamily::Llama}, {"gpt2", ModelFamily::Gpt2}}}};

/// training.precision: the element type of weights and activations (4 or 2 bytes).
enum class Precision { Fp32, Bf16 };
inline constexpr NameTable<Precision, 2> kPrecisionNames{
    {{{"fp32", Precision::Fp32}, {"bf16", Precision::Bf16}}}};

/// cluster.device.kind: what the simulated hosts stand for.
enum class DeviceKind { Cpu, Gpu };
inline constexpr NameTable<DeviceKind, 2> kDeviceKindNames{
    {{{"cpu", DeviceKind::Cpu}, {"gpu", DeviceKind::Gpu}}}};

/// cluster.topology: the simulated inter-node network.
enum class Topology { Star, FatTree };
inline constexpr NameTable<Topology, 2> kTopologyNames{
    {{{"star", Topology::Star}, {"fat-tree", Topology::FatTree}}}};

/// runtime.backend: the c10d backend of the process groups.
enum class Backend { Gloo, Nccl };
inline constexpr NameTable<Backend, 2> kBackendNames{
    {{{"gloo", Backend::Gloo}, {"nccl", Backend::Nccl}}}};

/// runtime.device: where the runtime keeps its tensors.
enum class RuntimeDevice { Cpu, Cuda };
inline constexpr NameTable<RuntimeDevice, 2> kRuntimeDeviceNames{
    {{{"cpu", RuntimeDevice::Cpu}, {"cuda", RuntimeDevice::Cuda}}}};

}  // namespace dtwin
