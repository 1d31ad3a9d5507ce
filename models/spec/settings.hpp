// The scenario's settings that take one of a few named values (model.family, model.moe.router,
// model.attention, layout.recompute, layout.offload, layout.cp_comm_type, training.precision,
// cluster.device.kind, cluster.topology, runtime.backend, runtime.device), each with its one table
// of names. The schedule vocabulary (layout.schedule, layout.dp_sync) lives in
// schedules/schedule.hpp.
#pragma once

#include "base/name_table.hpp"

namespace dtwin {

/// model.family: the architecture (see ModelSpec): two decoders and two encoders.
enum class ModelFamily { Llama, Gpt2, Bert, DistilBert };
inline constexpr NameTable<ModelFamily, 4> kModelFamilyNames{
    {{{"llama", ModelFamily::Llama},
      {"gpt2", ModelFamily::Gpt2},
      {"bert", ModelFamily::Bert},
      {"distilbert", ModelFamily::DistilBert}}}};

/// True for the encoder families (bidirectional attention, a classification head).
constexpr bool is_encoder(ModelFamily family) {
  return family == ModelFamily::Bert || family == ModelFamily::DistilBert;
}

/// training.lr_decay_style: the learning rate after the warm-up: held (constant) or decayed
/// linearly to 0 at the last step (transformers' get_linear_schedule_with_warmup, which the GLUE
/// fine-tuning examples use; Megatron-LM's --lr-decay-style linear).
enum class LrDecay { Constant, Linear };
inline constexpr NameTable<LrDecay, 2> kLrDecayNames{
    {{{"constant", LrDecay::Constant}, {"linear", LrDecay::Linear}}}};

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

/// training.precision: the element type of weights and activations (4 or 2 bytes). fp8 is bf16
/// weights and activations whose transformer-layer linear GEMMs take fp8 operands (Megatron-LM's
/// --bf16 --fp8-format hybrid: e4m3 forward, e5m2 gradients); as an operand type, 1 byte.
enum class Precision { Fp32, Bf16, Fp8 };
inline constexpr NameTable<Precision, 3> kPrecisionNames{
    {{{"fp32", Precision::Fp32}, {"bf16", Precision::Bf16}, {"fp8", Precision::Fp8}}}};

/// The type weights and activations are stored in at training precision `p`: bf16 under fp8.
inline constexpr Precision storage_precision(Precision p) {
  return p == Precision::Fp8 ? Precision::Bf16 : p;
}

/// training.fp8_recipe: how fp8 GEMM operands are scaled (Megatron-Core's --fp8-recipe).
///  - delayed: one scale per tensor from the amax history of past steps (Transformer Engine's
///    DelayedScaling);
///  - tensorwise: one scale per tensor from its current amax (Float8CurrentScaling);
///  - blockwise: one fp32 scale per 1×128 tile of activations and gradients and per 128×128
///    block of weights (DeepSeek-V3 report §3.3; Float8BlockScaling);
///  - mxfp8: one e8m0 scale per 32 consecutive elements (OCP Microscaling; MXFP8BlockScaling).
enum class Fp8Recipe { Delayed, Tensorwise, Blockwise, Mxfp8 };
inline constexpr NameTable<Fp8Recipe, 4> kFp8RecipeNames{{{{"delayed", Fp8Recipe::Delayed},
                                                           {"tensorwise", Fp8Recipe::Tensorwise},
                                                           {"blockwise", Fp8Recipe::Blockwise},
                                                           {"mxfp8", Fp8Recipe::Mxfp8}}}};

/// layout.cp_comm_type: how the ranks of a context-parallel group (layout.cp) exchange keys and
/// values for attention (Megatron-Core's --cp-comm-type: p2p, allgather, a2a):
///  - p2p: a ring (Liu et al. 2023, "Ring Attention"; Transformer Engine's
///    AttnFuncWithCPAndKVP2P): cp − 1 steps, each sending the rank's current key/value chunk to the
///    next while attending to the one it holds, so the exchange overlaps the attention; the
///    sequence is cut into 2·cp chunks, rank c holding chunks c and 2·cp − 1 − c to balance the
///    causal mask's work;
///  - all_gather: the key/value chunks all-gathered before the attention (and their gradients
///    reduce-scattered after its backward), not overlapped;
///  - a2a: DeepSpeed-Ulysses (Jacobs et al. 2023): all-to-alls that turn sequence shards into head
///    shards before the attention (q, k, v) and back after it (the output), not overlapped.
enum class CpCommType { P2p, AllGather, A2a };
inline constexpr NameTable<CpCommType, 3> kCpCommTypeNames{
    {{{"p2p", CpCommType::P2p}, {"all_gather", CpCommType::AllGather}, {"a2a", CpCommType::A2a}}}};

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
