// The analytic cost and memory model of a scenario's pipeline stages: parameters, FLOPs of the
// forward, of the two halves of the backward and of the optimizer step, activation memory, and
// the bytes that pipeline and data-parallel communication move. Plain arithmetic on the model's
// dimensions; the simulator turns it into seconds (or replaces it with a measured Profile).
//
// Notation: T = b·s/cp tokens per microbatch on one GPU (b = layout.micro_batch_size,
// s = model.seq_len, cp = layout.cp: context parallelism gives each GPU s/cp of every sequence),
// d = d_model, f = ffn_hidden, V = vocab_size, a = n_heads, kv = n_kv_heads (a unless given),
// hd = d/a, L = n_layers. A multiply-add counts as 2 FLOPs. Only matrix products are counted:
// norms, activations, softmax, biases, residual adds and the embedding lookup are element-wise and
// left out, as in Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM", appendix "Floating-point operations") and PaLM (Chowdhery et al.
// 2022, appendix B).
//
// Parameters per transformer layer, with A = 2d² + 2·d·kv·hd the attention weights (q and o d×d,
// k and v d×kv·hd: grouped-query attention, Ainslie et al. 2023, as LLaMA-2 70B and LLaMA-3 use
// it, Touvron et al. 2023 §2.2; Megatron-Core's num_query_groups; A = 4d² for multi-head
// attention, kv = a):
//  - llama: A (no bias) + 3·d·f (SwiGLU gate, up, down) + 2d (two RMSNorm weights); token
//    embedding V·d on the first stage; final RMSNorm d and an untied LM head V·d on the last
//    stage (Touvron et al. 2023).
//  - gpt2: A + 2d + 2·kv·hd (attention weights and biases) + 2·d·f + f + d (MLP weights and
//    biases) + 4d (two LayerNorms, weight and bias); token and position embeddings V·d + s·d on the
//    first stage; final LayerNorm 2d on the last stage (Radford et al. 2019). The LM head is tied
//    to the token embedding. With more than one stage the last stage holds its own copy of the tied
//    matrix (V·d), as Megatron-LM does (its gradient is all-reduced with the first stage's in
//    Megatron's "embedding group"; this model charges the copy to the last stage's parameters,
//    memory and gradient bytes). With a single stage the tied matrix is counted once.
//
// A stage's params count what its tensor-parallel group holds: the layer's parameters, and where
// tp > kv the copies of the key/value heads replicated on tp/kv GPUs each (2·(tp − kv)·hd·d more
// weights per layer, and for gpt2 2·(tp − kv)·hd biases; models/cost/attention_split.hpp), so that
// params / tp is what one GPU holds; the FLOPs per GPU likewise include the replicated heads'
// projections. total_params() counts each parameter once.
//
// Stage s of the pp·v stages holds layout.stage_layers[s] consecutive layers, or n_layers/(pp·v)
// when that list is empty; stage 0 has the embedding, stage pp·v − 1 the head (with interleaving,
// stage s runs on pipeline rank s mod pp).
#pragma once

#include <optional>
#include <vector>

#include "models/spec/scenario.hpp"
#include "models/spec/stage_partition.hpp"

namespace dtwin {

/// Seconds per microbatch on one GPU from the kernel-level compute model
/// (models/cost/layer_ops.hpp), recomputation included in input_backward, and the seconds the
/// GPU waits for its host thread in each pass (models/cost/layer_host_stall.hpp); optimizer is
/// one step over the GPU's shard.
struct KernelSeconds {
  double forward = 0;
  double input_backward = 0;
  double weight_backward = 0;
  /// B, I and W in one pass: their kernels' seconds and the stall of the interleaved pass (at
  /// most input_backward + weight_backward).
  double backward = 0;
  double optimizer = 0;
};

/// Per-stage costs of one microbatch (micro_batch_size sequences of seq_len tokens). FLOPs,
/// activation bytes and seconds are per GPU of the stage's tensor-parallel group (a 1/tp share
/// of the layer's matrix products); params counts the whole stage.
/// The stage's layers are those of the scenario's StagePartition.
struct StageCost : StageLayers {
  double params = 0;  ///< parameters the stage's tensor-parallel group holds (count; see the file
                      ///< comment for replicated key/value heads)
  double forward_flops = 0;          ///< F, per microbatch
  double input_backward_flops = 0;   ///< I: gradient w.r.t. inputs/activations, per microbatch
                                     ///< (with the recomputed forward's FLOPs)
  double recompute_flops = 0;        ///< the part of I that recomputes forward work
  double weight_backward_flops = 0;  ///< W: gradient w.r.t. weights, per microbatch
  double activation_bytes = 0;       ///< held from F until the backward frees them, per microbatch
  /// The part of activation_bytes that a split backward's I frees, the rest held until W
  /// (input_backward_freed_bytes of models/cost/parallel_memory.hpp per layer), per microbatch.
  double input_backward_freed_bytes = 0;
  double backward_workspace_bytes = 0;  ///< more bytes held while a backward (B or I) runs: the
                                        ///< logits' gradient, or a recomputed layer
  double optimizer_flops = 0;  ///< one AdamW step over the stage's parameters (/ dp·cp, ZeRO)
  /// More bytes held while OPTIM runs: LibTorch's AdamW computes sqrt(v)/sqrt(1 - beta2^t) + eps
  /// one tensor at a time, two fp32 temporaries the size of the largest tensor it steps (the
  /// embedding or head, a feed-forward weight, or under ZeRO the flat shard).
  double optimizer_workspace_bytes = 0;
  int moe_layers = 0;  ///< of its layers, those with experts (moe_layers_in, moe_layer.hpp)
  /// Tensor-parallel collectives inside F and inside I (or B), seconds, and with model.moe the
  /// MoE layers' expert-parallel all-to-alls (dispatch and combine: 2 per MoE layer in F, 2 in I,
  /// 2 more in I under full recomputation; moe_all_to_all_seconds), and with layout.cp the
  /// layers' exposed key/value exchange (cp_exposed_seconds), not counted in the collective
  /// counts below.
  double tp_forward_s = 0;
  double tp_input_backward_s = 0;
  /// How many tensor-parallel collectives F and I (or B) each run: Megatron's 2 per layer each
  /// way (2 more per layer in I under full recomputation), the vocabulary-parallel lookup's in
  /// F on the first stage, the head input's gradient sum in I on the last; 0 without tp.
  int tp_forward_collectives = 0;
  int tp_input_backward_collectives = 0;
  /// Compute seconds when the scenario names a device description (cluster.device.model).
  std::optional<KernelSeconds> kernel;
  double host_pass_s = 0;       ///< offloaded weights streamed in for each F and I (or B)
  double host_optimizer_s = 0;  ///< offloaded optimizer: gradients out, updated weights back
};

/// The costs of every pipeline stage of a scenario (see the file comment for the formulas).
///
/// FLOPs per microbatch, with Wm the matrix-product weights of a layer (llama A + 3·d·f, gpt2
/// A + 2·d·f; the group's, replicated key/value heads counted on each GPU):
///  - forward F, per layer: 2·T·Wm for the weight products plus 4·T·s·d for the attention score
///    (QKᵀ) and value (AV) products, counted in full (no causal halving) as PaLM appendix B and
///    Narayanan et al. 2021 do (per query head, so the same with grouped-query attention); the LM
///    head adds 2·T·d·V on the last stage.
///  - backward B = I + W = 2·F (Narayanan et al. 2021), split as in zero-bubble pipelines (Qi
///    et al. 2024, "Zero Bubble Pipeline Parallelism"): W, the weight gradients, costs the
///    weight products' forward again, 2·T·Wm per layer (+ 2·T·d·V for the head); I, the input
///    gradients, costs as much (2·T·Wm per layer, + 2·T·d·V for the head) plus the whole backward
///    of the weight-free attention products, twice their forward: 8·T·s·d per layer.
///
/// Activation bytes per microbatch (held from a stage's F until its backward frees them):
///  - per layer layer_activation_bytes (models/cost/parallel_memory.hpp): for gpt2
///    s·b·d·(34 + 5·a·s/d) bytes at 16-bit precision without recomputation or sequence/tensor
///    parallelism (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
///    Transformer Models", eq. 1), and their Table 2 for tensor and sequence parallelism,
///    selective and full recomputation and flash attention, scaled by bytes_per_element()/2;
///    for llama the tensors autograd saves in the runtime's LLaMA layer, counted the same way
///    (10·s·b·d + 4·s·b·f elements in fp32 without recomputation or tensor parallelism); with
///    grouped-query attention K and V are kv/a of Q's width in both (LayerActivationShape's
///    kv_ratio);
///  - the first stage adds the embedding output, T·d·bytes_per_element() (/tp with sequence
///    parallelism);
///  - the last stage adds the log-softmax of the logits that the loss keeps, T·V·4 / tp bytes
///    (vocabulary-parallel head; the loss is computed on fp32 logits at either precision, as
///    Korthikanti et al. 2022 §4.3 count it: 4·s·b·v), and while its backward runs the fp32
///    gradients of the log-softmax and of the logits, 2·T·V·4 / tp more
///    (backward_workspace_bytes).
///
/// Recomputation adds to I the forward work it repeats: the whole layer's F for full, the
/// attention products (4·T·s·d per layer) for selective. Tensor-parallel collectives (seconds,
/// tp_forward_s / tp_input_backward_s): 2 all-reduces of T·d elements per layer in F and 2 in I
/// (Narayanan et al. 2021 §3.2), 2 more in I with full recomputation, one more in F on the
/// embedding stage and in I on the head stage, each a ring over the tensor-parallel group
/// (ring_half_seconds twice) on the intra-node link (inter-node when tp exceeds a node); where
/// NCCL runs the collectives (nccl_collectives), NCCL's time for its fastest algorithm and
/// protocol instead (models/cost/nccl_model.hpp), with sequence parallelism an all-gather and a
/// reduce-scatter. With layout.tp_comm_overlap a layer's collectives run beside its GEMMs (F's;
/// I's and W's for the backward, the repeated forward's too under full recomputation) and add
/// max(0, comm − gemm) + (overlap_slowdown − 1)·min(comm, gemm) seconds instead of comm; the
/// embedding's and the head's stay exposed.
///
/// With a device description (cluster.device.model) each stage also gets KernelSeconds: the sum
/// of its operators' times (layer_seconds · layers, embedding_seconds on the first stage,
/// head_seconds on the last), with full recomputation adding the layers' forward to I and
/// selective recomputation their attention cores; the optimizer step is optimizer_seconds over
/// params / tp, divided by dp·cp under ZeRO (each GPU updates its shard). Each pass adds the
/// layers' host stall (layer_host_stall, with the layer's per-collective tensor-parallel
/// seconds): the time the GPU waits while the host issues kernels shorter than their issue.
///
/// Offload (layout.offload, over cluster.device.host_link; ZeRO-Offload, Ren et al. 2021): the
/// optimizer step leaves the GPU (its FLOPs and seconds become 0) and OPTIM moves the GPU's
/// gradient shard to the host and the updated weights back, 2α + shard · (grad_bytes_per_element
/// + bytes_per_element) / β; with optimizer+params (ZeRO-Infinity) each F and I (or B) also streams
/// the stage's params / tp weights in. The host CPU's Adam step itself is not timed.
///
/// Mixture of experts (model.moe, models/cost/moe_layer.hpp's closed forms): each MoE layer of a
/// stage (moe_layers_in) has moe_ffn_forward_flops instead of the dense MLP's 2·T·3·d·f/tp in F,
/// I and W (and in full recomputation), the router, shared expert and the GPU's
/// expert_params_per_gpu (× tp in params) instead of the MLP's 3·d·f weights, moe_layer_seconds
/// for its kernels, moe_layer_activation_bytes for its activations, and its dispatch and combine
/// all-to-alls in tp_forward_s and tp_input_backward_s; there its tensor-parallel collectives
/// are the attention's pair (half a dense layer's, overlapped alike) and the experts' all-gather
/// and reduce-scatter of moe_expert_tp_bytes over etp, exposed (Transformer Engine's overlap
/// covers the dense linear layers only). Expert states shard over edp under ZeRO
/// (static_memory_bytes, the optimizer step); expert gradients stay in gradient_bytes, which the
/// simulator reduces over dp·cp (not edp: an approximation). model_flops_per_token counts the
/// active feed-forward weights (moe_active_ffn_params).
///
/// Context parallelism (layout.cp, models/cost/context_parallel.hpp): every per-microbatch figure
/// above is per GPU of a context-parallel group with T = b·s/cp: its GEMMs, its s/cp queries'
/// attention over all s keys (4·T·s·d/tp, so the attention FLOPs divide by cp too), its
/// activations (layer_activation_bytes at sequence s/cp; flash attention only), and each
/// layer's key/value exchange that the attention does not hide (cp_exposed_seconds) in
/// tp_forward_s and tp_input_backward_s (the forward's again in I under recomputation).
/// Parameters are replicated over cp: ZeRO shards and the simulator reduces gradients over dp·cp.
/// Under hybrid sharding (layout.dp_shard) every "dp·cp" of ZeRO's shards below reads
/// dp_shard·cp (LayoutSpec::zero_group()): each shard group holds a copy of the sharded states.
///
/// Optimizer FLOPs per step: 12 per parameter, an estimate of AdamW's element-wise work (update
/// of the two moments, bias correction, the square root and division, weight decay and the
/// update itself); it is memory-bound in practice, so a measured Profile is better where there is
/// one.
class CostModel {
 public:
  /// Reads model.*, layout.*, training.precision and the cluster's links (for tensor-parallel
  /// collectives). Throws std::logic_error (a bug) for a scenario
  /// that the loader would have rejected (a family or precision without a table entry, a bad
  /// layer split).
  explicit CostModel(const Scenario& scenario);

  /// pp · virtual_stages.
  int num_stages() const { return static_cast<int>(stages_.size()); }
  /// Stage `s` in [0, num_stages()); throws std::out_of_range otherwise.
  const StageCost& stage(int s) const;
  const std::vector<StageCost>& stages() const { return stages_; }

  /// Bytes of the activation one stage sends the next per microbatch, b·s·d·bytes_per_element();
  /// its gradient, sent back, has the same size.
  double boundary_bytes() const;
  /// Bytes stage `s` reduces over its data-parallel group per step: its gradients, params ·
  /// grad_bytes_per_element() (training.grad_precision).
  double gradient_bytes(int s) const;
  /// The part of gradient_bytes(s) that belongs to routed experts under expert parallelism
  /// (layout.ep > 1; 0 otherwise): stage s's MoE layers' expert weights held by its tp GPUs,
  /// moe_layers · tp · expert_params_per_gpu · grad_bytes_per_element(). They are reduced over the
  /// expert data-parallel group (LayoutSpec::expert_dp), not the data-parallel one.
  double expert_gradient_bytes(int s) const;
  /// The bytes stage s's data-parallel ring reduces per step standing for both groups: the dense
  /// gradients, plus the expert ones scaled to the same per-link volume, r = ((edp − 1)/edp) /
  /// ((n − 1)/n) for a ring of edp expert replicas against one of n = dp·cp (Patarasuk & Yuan
  /// 2009: a ring all-reduce moves 2(n − 1)/n of the bytes over each link). Exact for edp 1
  /// (nothing to reduce) and edp = n; otherwise the latency is the larger ring's.
  /// gradient_bytes(s) without expert parallelism.
  double data_parallel_gradient_bytes(int s) const;
  /// Bytes of stage `s`'s training-precision weights, params · bytes_per_element(): what a ZeRO
  /// parameter all-gather (UNSHARD) moves. With training.fp8_param_gather the layers' linear
  /// weights (num_layers · Wm, the group's) move as one fp8 copy with its scales, (1 + σ) bytes
  /// each (half of fp8_copies_bytes_per_element), the rest at bytes_per_element().
  double weight_bytes(int s) const;
  /// Gradients per data-parallel bucket, in parameters (StagePartition::bucket_params).
  double bucket_params() const;
  /// Bytes of stage `s`'s parameters that weight averaging (layout.dp_sync: weight-average) moves:
  /// params · 4 in both precisions. With bf16 the averaged weights are the fp32 master copy (the
  /// bf16 weights are re-cast from it after the step), so 4 bytes per parameter, not 2.
  double parameter_bytes(int s) const;
  /// Bytes per GPU that stay resident on stage `s` whatever the schedule: weights, gradients and
  /// AdamW state of its params / tp parameters (model_state_bytes at the training and gradient
  /// precisions): fp32 = 4 + 4 + 8 (Adam m and v) = 16 bytes per parameter; bf16 with fp32
  /// gradients (the default) = 2 + 4 + 12 (fp32 master weights, m and v) = 18, Megatron-LM's
  /// figure; bf16 with bf16 gradients = 16, ZeRO's (Rajbhandari et al. 2020, §3.1). Sharded over
  /// dp·cp by layout.zero and moved to the host by layout.offload. At precision fp8, plus
  /// fp8_weight_bytes(s).
  double static_memory_bytes(int s) const;
  /// Bytes per GPU of the fp8 copies of stage `s`'s layer linear weights (precision fp8, else 0):
  /// num_layers · Wm / tp weights (Wm with layout.copies' duplicates) · 2 · (1 + σ), a row-wise
  /// and a column-wise copy with their scales (fp8_copies_bytes_per_element for weights),
  /// which Transformer Engine keeps from the first microbatch's cast to the step's end; sharded
  /// over dp·cp with layout.zero = 3, as the weights they are cast from.
  double fp8_weight_bytes(int s) const;

  /// Bytes per GPU of stage `s`'s weights while ZeRO-3 holds them gathered (UNSHARD to RESHARD):
  /// the whole params / tp at bytes_per_element() with layout.zero3_gather stage, the two
  /// largest units (gathered_unit_params) with layer; with training.fp8_param_gather at
  /// weight_bytes(s) / params bytes each (the stage's mix of fp8 and bf16 weights). The 1/(dp·cp)
  /// shard that static_memory_bytes counts stays allocated beside them, as PyTorch FSDP's sharded
  /// and unsharded flat parameters do.
  double gathered_weight_bytes(int s) const;
  /// Bytes per GPU of stage `s`'s gradients beyond its 1/(dp·cp) shard while ZeRO 2 or 3 holds them
  /// unreduced (the first backward to its REDUCE_GRAD): params / tp · grad_bytes_per_element() ·
  /// (1 - 1/(dp·cp)), of gathered_unit_params with zero 3 and zero3_gather layer (each layer's
  /// gradients are reduce-scattered as its backward ends, so about two layers' are held).
  double gathered_gradient_bytes(int s) const;
  /// Parameters of stage `s`'s two largest gather units under zero3_gather layer: the running
  /// unit and the prefetched one (DeepSpeed ZeRO-3's and FSDP's one-module prefetch), units being
  /// its transformer layers, its embedding and its head (final norm, LM head).
  double gathered_unit_params(int s) const;
  /// Transformer layers of stage `s`, counting the embedding and the head as one unit each:
  /// the gathers per pass under zero3_gather layer.
  int gather_units(int s) const;

  /// Parameters of the model, each counted once (gpt2's tied embedding/head once, whatever pp is;
  /// the sum of stage(s).params exceeds it by V·d when the model is gpt2 and num_stages() > 1,
  /// and by the replicated key/value heads' copies when tp > n_kv_heads).
  double total_params() const;
  /// N of the MFU formula: total_params() less the input lookup tables that are never used as a
  /// matrix product: the token embedding V·d for llama (whose LM head is a separate matrix that
  /// stays in N), the position embedding s·d for gpt2 (whose token embedding is also its LM head,
  /// a matrix product on every token, so it stays in N), all three lookup tables (tokens,
  /// positions, token types) for bert and distilbert. This is the count nanoGPT's MFU uses for
  /// GPT-2 (Karpathy, model.py get_num_params(non_embedding=True)).
  double non_embedding_params() const;
  /// Model FLOPs of a training step (forward and backward) per token, 6·N + 12·L·d·s with N =
  /// non_embedding_params(): 6 FLOPs per parameter per token for the weight products and
  /// 12·L·d·s for the attention products (Chowdhery et al. 2022, "PaLM", appendix B). Divided
  /// into the achieved FLOP/s it gives the model FLOPs utilisation (MFU). It equals the sum over
  /// stages of F + I + W per token up to the norm and bias parameters (which this model does not
  /// charge FLOPs for) and, where tp > n_kv_heads, the replicated key/value projections. With
  /// grouped-query attention it is NVIDIA's Llama 3 count, 12·L·d²·(1 + kv/a + s/d) + 18·L·f·d +
  /// 6·V·d (dgxc-benchmarking llama3.1/README_8b.md), plus 6 per norm weight. An encoder's
  /// classification head (pooler and classifier) runs on one token per sequence: it counts
  /// 6·head/s per token instead of 6·head.
  double model_flops_per_token() const;
  /// Tokens of a microbatch that one GPU processes, b · s / cp (b · s without context
  /// parallelism).
  double tokens_per_microbatch() const;
  /// Bytes of a weight or activation element at the training precision: 4 (fp32), 2 (bf16).
  double bytes_per_element() const { return bytes_per_element_; }
  /// Bytes of a gradient element at training.grad_precision: 4 (fp32), 2 (bf16).
  double grad_bytes_per_element() const { return grad_bytes_per_element_; }

 private:
  ModelSpec model_;
  LayoutSpec layout_;
  double bytes_per_element_ = 4;
  double grad_bytes_per_element_ = 4;
  bool fp8_ = false;               ///< training.precision fp8
  bool fp8_param_gather_ = false;  ///< training.fp8_param_gather
  Fp8Recipe fp8_recipe_ = Fp8Recipe::Delayed;
  double bucket_params_ = 0;
  /// The linear weights of stage `s`'s layers that its tensor-parallel group holds, num_layers ·
  /// Wm (the weights fp8 casts and fp8 parameter gathers move).
  double layer_linear_weights(int s) const;
  std::vector<StageCost> stages_;
};

}  // namespace dtwin
