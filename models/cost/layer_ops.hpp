// The operators (kernels) that one GPU runs for a transformer layer, the last stage's head, the
// first stage's embedding and the optimizer step, and their seconds under the kernel-level
// compute model (models/cost/kernel_model.hpp). Tensor-parallel communication (the all-reduces, or
// the all-gathers and reduce-scatters of sequence parallelism) is not included here.
//
// Notation as in models/cost/cost_model.hpp, per microbatch and per GPU: T = b·s/cp tokens (b =
// layout.micro_batch_size, s = model.seq_len, cp = layout.cp; a context-parallel GPU's attention
// takes its s/cp queries over all s keys), d = d_model, f = ffn_hidden, V = vocab_size,
// a = n_heads, hd = d/a, tp = layout.tp, e = bytes per element at the training precision; per
// GPU, q = (a/tp)·hd query columns and c = kv'·hd key (and as many value) columns, kv' =
// max(1, n_kv_heads/tp) key/value heads (models/cost/attention_split.hpp; c = d/tp for
// multi-head attention). Tensor parallelism splits as Megatron-LM does (Shoeybi et al. 2019): the
// QKV and MLP up/gate projections by columns (n = q + 2c, f/tp), the attention output and MLP down
// projections by rows (k = d/tp, f/tp), a/tp heads per GPU; the LM head by vocabulary
// (n = V/tp). The attention core's work is per query head, b·a/tp of them per GPU, whatever kv
// is: grouped-query attention shares a key/value head between query heads without shrinking it.
// Norms, dropout and residual adds run on all T tokens of every GPU of the group, or on T/tp of
// them with sequence parallelism (Korthikanti et al. 2022); call that count Tn.
//
// Every operator of the forward F has its input-gradient backward I (in reverse order) and, if
// it has weights, its weight-gradient backward W, as in zero-bubble schedules (Qi et al. 2024):
// a GEMM (m, n, k) has the dgrad GEMM (m, k, n) in I and the wgrad GEMM (k, n, m) in W; the
// attention core has its backward in I; a memory-bound operator has its backward kernel in I.
// Bias additions run in the GEMM epilogues and bias gradients in the wgrad GEMMs, and norm
// weight gradients in the norm backward kernel: none has a kernel of its own.
//
// Bytes of the memory-bound operators, forward / input backward (weights of d elements and
// other tables much smaller than the activations are left out):
//  - RMSNorm or LayerNorm: reads x and writes y, 2·Tn·d·e / reads x and dy and writes dx,
//    3·Tn·d·e;
//  - rotary embedding (llama): reads and writes q and k, 2·T·(q + c)·e / the same for their
//    gradients;
//  - residual add (llama): reads both inputs and writes the sum, 3·Tn·d·e / adds the branch's
//    gradient to the residual stream's, 3·Tn·d·e;
//  - dropout and residual add (gpt2, fused as Megatron-LM does): the same plus the dropout's
//    one-byte mask written, 3·Tn·d·e + Tn·d / the dropout backward (reads dy and the mask,
//    writes dx) and the residual gradient add, 5·Tn·d·e + Tn·d;
//  - SwiGLU (llama): reads gate and up and writes their product, 3·T·(f/tp)·e / reads gate, up
//    and dy and writes both gradients, 5·T·(f/tp)·e;
//  - GELU (gpt2): reads x and writes y, 2·T·(f/tp)·e / reads x and dy and writes dx,
//    3·T·(f/tp)·e;
//  - cross-entropy over the T·V/tp logits: reads them for their maximum, reads them again and
//    writes the softmax kept for the backward, 3·T·(V/tp)·e / reads the softmax and writes the
//    logits' gradient, 2·T·(V/tp)·e;
//  - embedding lookup (a gather, one per table: the token embedding, and for gpt2 the position
//    embedding): reads T rows of each table and writes their sum, (tables + 1)·T·d·e; no input
//    gradient; its weight gradient (in W) reads the output gradient and adds it into T rows of
//    each table's gradient, 3·tables·T·d·e. A vocabulary-parallel table writes the whole T·d
//    output on every GPU (rows of other GPUs' shards as zeros).
//
// FP8 (training.precision fp8; Transformer Engine's semantics, Micikevicius et al. 2022, "FP8
// Formats for Deep Learning"): the layer's linear GEMMs (QKV, attention output, MLP up/gate/down
// or fc1/fc2; forward, dgrad and wgrad) take fp8 operands at the device's fp8_flops with the same
// gemm_efficiency (an assumption, not a fit); the attention core, the LM head, the embedding and
// the norms stay bf16. Each fp8 GEMM (m, n, k) is preceded by a memory-bound cast operator that
// reads each bf16 operand and writes two fp8 copies of it (row-wise for its forward or dgrad use
// and column-wise/transposed for the other, as Hopper's fp8 GEMMs take only the TN layout and
// MXFP8 scales along the contraction axis) with their scales; per element, with σ scale bytes per
// fp8 element, c = 2 + 2·(1 + σ) (+ 2 for tensorwise current scaling, whose amax is a first
// read pass; delayed scaling takes it from the amax history):
//    σ = 0 (delayed, tensorwise: one scale per tensor), 4/128 for activations and gradients and
//    4/16384 for weights (blockwise: fp32 per 1×128 tile and 128×128 block, DeepSeek-V3 report
//    §3.3), 1/32 (mxfp8: one e8m0 byte per 32 elements, OCP Microscaling spec).
//  - F: c·m·k for the input plus c·k·n / microbatches for the weight (cast once per step and
//    cached, Transformer Engine's is_first_microbatch);
//  - I: c·m·n for the output gradient; W uses the copies already made.
// Fusions of the casts into the preceding norm or activation are left out.
#pragma once

#include <string>
#include <vector>

#include "models/cost/kernel_model.hpp"
#include "models/spec/device_description.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin {

enum class OpKind { Gemm, Attention, MemoryBound };

/// The three passes of a microbatch: forward F, input-gradient backward I, weight-gradient
/// backward W.
enum class Pass { Forward, InputBackward, WeightBackward };

/// One operator (one kernel, or for eager attention a few) on one GPU.
struct Op {
  std::string name;  ///< e.g. "qkv", "qkv dgrad", "qkv wgrad", "attention backward"
  OpKind kind = OpKind::MemoryBound;
  double m = 0, n = 0, k = 0;  ///< Gemm: C[m×n] = A[m×k]·B[k×n]
  /// Gemm: independent GEMMs of this shape in one kernel (a grouped GEMM's local experts).
  double batch = 1;
  AttentionCore attention;  ///< Attention: the core it computes
  double flops = 0;         ///< Gemm (2·m·n·k·batch) and Attention (attention_flops); else 0
  double bytes = 0;         ///< MemoryBound: bytes read and written (see the file comment)
  /// Framework operators the host dispatches for it in its pass (models/cost/host_ops.hpp; a
  /// layer operator's backward count split evenly between its dgrad and wgrad GEMMs); 0 for the
  /// embedding's and the head's operators, which are not counted.
  int host_ops = 0;
  int host_ops_no_grad = 0;  ///< Forward: the same under torch.no_grad
  bool fp8 = false;          ///< Gemm: fp8 operands (at the device's fp8_flops)
};

/// Seconds per microbatch of each pass.
struct PassSeconds {
  double forward = 0;
  double input_backward = 0;
  double weight_backward = 0;
};

/// The operators of one transformer layer of `model` in `pass` for one microbatch, in the order
/// they run, on one GPU of a tensor-parallel group of layout.tp (with
/// layout.sequence_parallel), at training precision `precision`.
///  - llama: RMSNorm, QKV (n = q + 2c, no bias), rotary, attention, output projection (k = d/tp),
///    residual add, RMSNorm, MLP gate and up (n = f/tp each), SwiGLU, down (k = f/tp), residual.
///  - gpt2: LayerNorm, QKV with bias, attention with dropout, output projection, dropout and
///    residual add, LayerNorm, MLP fc1 (n = f/tp), GELU, fc2 (k = f/tp), dropout and residual.
/// The GEMM FLOPs of F sum to 2·T·Wm/tp (Wm as in CostModel); those of I and of W to as much.
/// At precision fp8 every GEMM here runs in fp8 after its "<gemm> fp8 cast" operator (see the
/// file comment), with operands scaled by `recipe`.
std::vector<Op> layer_ops(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
                          Pass pass, Fp8Recipe recipe = Fp8Recipe::Delayed);
/// The operators of one mixture-of-experts layer (model.moe, llama; models/cost/moe_layer.hpp's
/// notation): layer_ops with the dense MLP's gate, up, SwiGLU and down replaced by the router
/// GEMM (Tg, E, d); the permute, memory-bound, reading and writing the Tg·k routed token copies,
/// 2·Tg·k·d·e each way; the experts' gate and up (Te, fe/etp, d), SwiGLU over Te·fe/etp and down
/// (Te, d, fe/etp), with Te = moe_expert_tokens the busiest GPU's expert tokens, each as a grouped
/// GEMM: E/ep GEMMs (Op::batch) of Te/(E/ep) tokens each, so that few tokens per expert lose
/// the tile and wave quantization gemm_seconds prices (DeepSeek-V3's 256 experts of 2048 at 8 per
/// GPU); the un-permute and combine, reading the k copies and writing Tg tokens,
/// Tg·(k + 1)·d·e each way; and the shared expert, a dense SwiGLU MLP of width fs/tp on T tokens.
/// The dispatch and combine all-to-alls are not operators (CostModel charges them). The new
/// operators take the host-op counts of the dense operator of the same kind (GEMMs those of
/// mlp_gate/up/down, memory-bound ones SwiGLU's). Their F GEMM FLOPs sum to the dense layer's
/// less the MLP's plus moe_ffn_forward_flops.
std::vector<Op> moe_layer_ops(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
                              Pass pass);
/// The last stage's head: the final norm, the LM head GEMM (T, V/tp, d) and the cross-entropy.
std::vector<Op> head_ops(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
                         Pass pass);
/// The first stage's embedding lookup (F) and its weight gradient (W); I is empty.
std::vector<Op> embedding_ops(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
                              Pass pass);

/// Seconds of `op` on `device` (gemm_seconds, attention_seconds or memory_bound_seconds), at the
/// storage type of `precision` (bf16 under fp8) but for fp8 GEMMs.
double op_seconds(const DeviceDescription& device, const Op& op, Precision precision);

/// Seconds per microbatch of each pass of one layer on one GPU: the sums of op_seconds over
/// layer_ops.
PassSeconds layer_seconds(const DeviceDescription& device, const ModelSpec& model,
                          const LayoutSpec& layout, Precision precision,
                          Fp8Recipe recipe = Fp8Recipe::Delayed);
/// The same for moe_layer_ops.
PassSeconds moe_layer_seconds(const DeviceDescription& device, const ModelSpec& model,
                              const LayoutSpec& layout, Precision precision);
/// The same for head_ops.
PassSeconds head_seconds(const DeviceDescription& device, const ModelSpec& model,
                         const LayoutSpec& layout, Precision precision);
/// The same for embedding_ops.
PassSeconds embedding_seconds(const DeviceDescription& device, const ModelSpec& model,
                              const LayoutSpec& layout, Precision precision);

/// The operands of an fp8 GEMM, which the recipes scale differently.
enum class Fp8Operand { Activation, Weight };

/// Bytes of the two fp8 copies (row-wise and column-wise) of one element of `operand` with their
/// scales, 2·(1 + σ) (σ per recipe, see the file comment).
double fp8_copies_bytes_per_element(Fp8Recipe recipe, Fp8Operand operand);

/// Bytes an fp8 cast moves per element of a bf16 operand (see the file comment): reads it (2),
/// writes its two copies (fp8_copies_bytes_per_element), and under tensorwise current scaling
/// first reads it for its amax (2).
double fp8_cast_bytes_per_element(Fp8Recipe recipe, Fp8Operand operand);

/// Bytes of the fp8 casts of the GEMM C[m×n] = A[m×k]·B[k×n] per microbatch: forward, the input
/// A (m·k) and the weight B (k·n, cast once per step and so shared by `microbatches`); input
/// backward, the output gradient (m·n).
struct Fp8CastBytes {
  double forward = 0;
  double input_backward = 0;
};
Fp8CastBytes fp8_cast_bytes(double m, double n, double k, Fp8Recipe recipe, double microbatches);

/// Bytes that an AdamW step reads and writes per parameter, 28 in both precisions: fp32 reads
/// and writes the weight, m and v (24) and reads the gradient (4); bf16 reads and writes the
/// fp32 master weight, m and v (24), reads the bf16 gradient (2) and writes the bf16 weight (2)
/// (mixed-precision Adam as in Rajbhandari et al. 2020, "ZeRO", §3.1).
inline constexpr double kAdamBytesPerParam = 28;

/// Seconds of one AdamW step over `params_per_gpu` parameters (the GPU's shard), memory-bound:
/// memory_bound_seconds(kAdamBytesPerParam · params_per_gpu), one fused multi-tensor kernel.
double optimizer_seconds(const DeviceDescription& device, double params_per_gpu);

}  // namespace dtwin
