// The scenario's settings that take one of a few named values (model.family, model.moe.router,
// model.attention, layout.recompute, layout.offload, training.precision, cluster.device.kind,
// cluster.topology, runtime.backend, runtime.device), each with its one table of names. The
// schedule vocabulary (layout.schedule, layout.dp_sync) lives in schedules/schedule.hpp.
#pragma once

#include "base/name_table.hpp"

namespace dtwin {

/// model.family: the decoder-only architecture (see ModelSpec).
enum class ModelFamily { Llama, Gpt2 };
inline constexpr NameTable<ModelFamily, 2> kModelFamilyNames{
    {{{"llama", ModelFamily::Llama}, {"gpt2", ModelFamily::Gpt2}}}};

/// model.moe.router: how a mixture-of-experts layer scores its experts before taking the top k:
/// a softmax over the experts' logits (Mixtral, Megatron-Core's default), or a sigmoid per
/// expert with a learned bias added for the choice only (DeepSeek-V3's auxiliary-loss-free
/// balancing, Wang et al. 2024; Megatron-Core's --moe-router-score-function sigmoid with
/// --moe-router-enable-expert-bias). Both cost the same here: one d×E GEMM and a top-k.
enum class Router { Softmax, Sigmoid };
inline constexpr NameTable<Router, 2> kRouterNames{
    {{{"softmax", Router::Softmax}, {"sigmoid", Router::Sigmoid}}}};

/// model.attention: how attention is computed. Flash (memory-efficient) attention never stores
/// the a·s² score and softmax tensors, so Korthikanti et al. 2022's 5as/h activation term drops
/// out, and its time follows its FLOPs; eager attention materialises them, and its softmax and
/// dropout are timed by their memory traffic.
enum class Attention { Eager, Flash };
inline constexpr NameTable<Attention, 2> kAttentionNames{
    {{{"eager", Attention::Eager}, {"flash", Attention::Flash}}}};

/// layout.recompute: activation recomputation (Korthikanti et al. 2022, §4 and Table 2). Selective
/// recomputes the attention core (QKᵀ, softmax, dropout, AV) in the backward; full keeps only
/// each layer's input and re-runs its whole forward in the backward.
enum class Recompute { None, Selective, Full };
inline constexpr NameTable<Recompute, 3> kRecomputeNames{
    {{{"none", Recompute::None}, {"selective", Recompute::Selective}, {"full", Recompute::Full}}}};

/// layout.offload: ZeRO-Offload / ZeRO-Infinity style placement of model states in host memory,
/// reached over cluster.device.host_link (Ren et al. 2021; Rajbhandari et al. 2021).
enum class Offload { None, Optimizer, OptimizerParams };
inline constexpr NameTable<Offload, 3> kOffloadNames{
    {{{"none", Offload::None},
      {"optimizer", Offload::Optimizer},
      {"optimizer+params", Offload::OptimizerParams}}}};

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
