#include "models/cost/layer_ops.hpp"

#include <algorithm>

#include "models/cost/attention_split.hpp"
#include "models/cost/host_ops.hpp"
#include "models/cost/moe_layer.hpp"

namespace dtwin {
namespace {

/// A forward operator with the bytes of its backward kernels (memory-bound operators): the
/// source of its ops in the three passes.
struct Step {
  Op forward;
  double input_backward_bytes = 0;   ///< MemoryBound: its kernel in I (none if 0)
  double weight_backward_bytes = 0;  ///< MemoryBound: its kernel in W (none if 0)
  int backward_host_ops = 0;         ///< framework operators of its backward (host_ops.hpp)
};

Step gemm(const std::string& name, double m, double n, double k, double batch = 1) {
  Op op;
  op.name = name;
  op.kind = OpKind::Gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2 * m * n * k * batch;
  return {op};
}

Step memory(const std::string& name, double forward_bytes, double input_backward_bytes,
            double weight_backward_bytes = 0) {
  Op op;
  op.name = name;
  op.bytes = forward_bytes;
  return {op, input_backward_bytes, weight_backward_bytes};
}

Step attention(const std::string& name, const AttentionCore& core) {
  Op op;
  op.name = name;
  op.kind = OpKind::Attention;
  op.attention = core;
  op.flops = attention_flops(core);
  return {op};
}

/// The ops of `steps` (forward operators in order) in `pass`: F in order, I in reverse order,
/// W in reverse order (the order the backward reaches them).
std::vector<Op> ops_of(const std::vector<Step>& steps, Pass pass) {
  std::vector<Op> ops;
  if (pass == Pass::Forward) {
    for (const Step& s : steps) {
      if (s.forward.kind != OpKind::MemoryBound || s.forward.bytes > 0) ops.push_back(s.forward);
    }
    return ops;
  }
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const Op& f = it->forward;
    const bool input = pass == Pass::InputBackward;
    const int host = it->backward_host_ops;
    if (f.kind == OpKind::Gemm) {
      // dX[m×k] = dY[m×n]·Wᵀ[n×k]; dW[k×n] = Xᵀ[k×m]·dY[m×n].
      ops.push_back(input ? gemm(f.name + " dgrad", f.m, f.k, f.n, f.batch).forward
                          : gemm(f.name + " wgrad", f.k, f.n, f.m, f.batch).forward);
      ops.back().fp8 = f.fp8;
      ops.back().host_ops = input ? host - host / 2 : host / 2;
    } else if (f.kind == OpKind::Attention && input) {
      AttentionCore core = f.attention;
      core.backward = true;
      ops.push_back(attention("attention backward", core).forward);
      ops.back().host_ops = host;
    } else if (f.kind == OpKind::MemoryBound) {
      const double bytes = input ? it->input_backward_bytes : it->weight_backward_bytes;
      const std::string name = f.name + (input ? " backward" : " wgrad");
      if (bytes > 0) {
        ops.push_back(memory(name, bytes, 0).forward);
        ops.back().host_ops = input ? host : 0;
      }
    }
  }
  return ops;
}

/// The dimensions the op lists are built from, as doubles (products overflow int).
struct Dims {
  double T = 0;     ///< tokens per microbatch on the GPU, b·s/cp
  double Tn = 0;    ///< tokens of the norms, dropout and residual adds: T, or T/tp
  double s = 0;     ///< query positions per sequence on the GPU, s/cp
  double keys = 0;  ///< key positions each query attends over, s
  double d = 0, f = 0, V = 0, a = 0, b = 0, tp = 1, e = 4;
  double q_width = 0;   ///< query columns per GPU, (a/tp)·hd
  double kv_width = 0;  ///< key (and value) columns per GPU, max(1, kv/tp)·hd
  bool fp8 = false;     ///< the linear GEMMs take fp8 operands (training.precision fp8)
  Fp8Recipe recipe = Fp8Recipe::Delayed;
  double microbatches = 1;  ///< layout.microbatches: the weight casts are shared by them
};

Dims dims_of(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
             Fp8Recipe recipe = Fp8Recipe::Delayed) {
  Dims x;
  x.b = layout.micro_batch_size;
  x.keys = model.seq_len;
  x.s = x.keys / layout.cp;
  x.T = x.b * x.s;
  x.tp = layout.tp;
  x.Tn = layout.sequence_parallel ? x.T / x.tp : x.T;
  x.d = model.d_model;
  x.f = model.ffn_hidden;
  x.V = model.vocab_size;
  x.a = model.n_heads;
  x.e = element_bytes(storage_precision(precision));
  x.fp8 = precision == Precision::Fp8;
  x.recipe = recipe;
  x.microbatches = layout.microbatches;
  const AttentionSplit heads = attention_split(model, layout.tp);
  x.q_width = heads.q_per_gpu * heads.head_dim;
  x.kv_width = heads.kv_per_gpu * heads.head_dim;
  return x;
}

/// `steps` with each GEMM in fp8 and preceded by the memory-bound step of its casts (no host
/// operators of their own: Transformer Engine runs them inside its linear module's call).
std::vector<Step> with_fp8_casts(const std::vector<Step>& steps, const Dims& x) {
  std::vector<Step> out;
  for (const Step& step : steps) {
    if (step.forward.kind == OpKind::Gemm) {
      const Op& g = step.forward;
      const Fp8CastBytes bytes = fp8_cast_bytes(g.m, g.n, g.k, x.recipe, x.microbatches);
      out.push_back(
          memory(g.name + " fp8 cast", g.batch * bytes.forward, g.batch * bytes.input_backward));
      out.push_back(step);
      out.back().forward.fp8 = true;
    } else {
      out.push_back(step);
    }
  }
  return out;
}

std::vector<Step> layer_steps(const ModelSpec& model, const Dims& x) {
  const bool llama = model.family == ModelFamily::Llama;
  const double stream = x.Tn * x.d * x.e;  // one residual-stream tensor
  const double mask = llama ? 0 : x.Tn * x.d;
  const auto norm = [&](const std::string& name) { return memory(name, 2 * stream, 3 * stream); };
  const auto residual = [&](const std::string& name) {
    return llama ? memory(name, 3 * stream, 3 * stream)
                 : memory(name, 3 * stream + mask, 5 * stream + mask);
  };
  const double hidden = x.T * (x.f / x.tp) * x.e;  // one MLP hidden tensor

  AttentionCore core;
  core.batch_heads = x.b * x.a / x.tp;
  core.seq_len = x.s;
  core.key_len = x.keys;
  core.head_dim = x.d / x.a;
  core.kind = model.attention;
  core.dropout = !llama;
  core.causal = !is_encoder(model.family);

  std::vector<Step> steps = {norm("input_norm"), gemm("qkv", x.T, x.q_width + 2 * x.kv_width, x.d)};
  if (llama) {
    const double qk = x.T * (x.q_width + x.kv_width) * x.e;
    steps.push_back(memory("rotary", 2 * qk, 2 * qk));
  }
  steps.push_back(attention("attention", core));
  steps.push_back(gemm("attention_out", x.T, x.d, x.d / x.tp));
  steps.push_back(residual("attention_residual"));
  steps.push_back(norm("mlp_norm"));
  if (llama) {
    steps.push_back(gemm("mlp_gate", x.T, x.f / x.tp, x.d));
    steps.push_back(gemm("mlp_up", x.T, x.f / x.tp, x.d));
    steps.push_back(memory("swiglu", 3 * hidden, 5 * hidden));
    steps.push_back(gemm("mlp_down", x.T, x.d, x.f / x.tp));
  } else {
    steps.push_back(gemm("mlp_fc1", x.T, x.f / x.tp, x.d));
    steps.push_back(memory("gelu", 2 * hidden, 3 * hidden));
    steps.push_back(gemm("mlp_fc2", x.T, x.d, x.f / x.tp));
  }
  steps.push_back(residual("mlp_residual"));
  for (Step& step : steps) {
    const HostOps host = layer_host_ops(model.family, model.attention, step.forward.name);
    step.forward.host_ops = host.forward;
    step.forward.host_ops_no_grad = host.forward_no_grad;
    step.backward_host_ops = host.backward;
  }
  return x.fp8 ? with_fp8_casts(steps, x) : steps;
}

PassSeconds pass_seconds(const DeviceDescription& device, Precision precision,
                         const std::vector<Step>& steps) {
  const auto sum = [&](Pass pass) {
    double seconds = 0;
    for (const Op& op : ops_of(steps, pass)) seconds += op_seconds(device, op, precision);
    return seconds;
  };
  return {sum(Pass::Forward), sum(Pass::InputBackward), sum(Pass::WeightBackward)};
}

std::vector<Step> head_steps(const ModelSpec& model, const Dims& x) {
  const double stream = x.Tn * x.d * x.e;
  if (is_encoder(model.family)) {
    // On the first token of each of the b sequences: the pooler (pre-classifier), its tanh
    // (ReLU), the classifier and the loss over L logits.
    const double pooled = x.b * x.d * x.e, logits = x.b * model.num_labels * x.e;
    return {gemm("pooler", x.b, x.d, x.d), memory("pooler_activation", 2 * pooled, 3 * pooled),
            gemm("classifier", x.b, model.num_labels, x.d),
            memory("cross_entropy", 3 * logits, 2 * logits)};
  }
  const double logits = x.T * (x.V / x.tp) * x.e;
  return {memory("final_norm", 2 * stream, 3 * stream), gemm("lm_head", x.T, x.V / x.tp, x.d),
          memory("cross_entropy", 3 * logits, 2 * logits)};
}

std::vector<Step> embedding_steps(const ModelSpec& model, const Dims& x) {
  // Lookup tables summed: tokens, with learned positions (gpt2, the encoders) and token types
  // (bert); the encoders then normalise the sum (a LayerNorm, as the layers' norms).
  const double tables = model.family == ModelFamily::Llama  ? 1
                        : model.family == ModelFamily::Bert ? 3
                                                            : 2;
  const double rows = x.T * x.d * x.e;
  std::vector<Step> steps = {memory("embedding", (tables + 1) * rows, 0, 3 * tables * rows)};
  if (is_encoder(model.family)) steps.push_back(memory("embedding_norm", 2 * rows, 3 * rows));
  return steps;
}

/// A MoE layer's feed-forward operators (see moe_layer_ops in layer_ops.hpp), their host-op
/// counts those of the dense operator each stands for (not measured for MoE).
std::vector<Step> moe_ffn_steps(const ModelSpec& model, const LayoutSpec& layout, const Dims& x) {
  const MoeSpec& moe = model.moe;
  const double Tg = moe_tokens_per_gpu(layout, x.T);
  const double Te = moe_expert_tokens(model, layout, x.T);
  const double fe = double(moe.expert_ffn_hidden) / layout.expert_tp();
  // The grouped GEMM runs one GEMM per local expert, each over its share of the tokens.
  const double local = double(moe.num_experts) / layout.ep;
  const double Tx = Te / local;
  const double routed = Tg * moe.top_k * x.d * x.e;  // one tensor of the routed token copies
  const double hidden = Te * fe * x.e;
  struct Named {
    Step step;
    const char* like;  ///< the dense operator whose host-op counts it takes
  };
  std::vector<Named> named = {
      {gemm("moe_router", Tg, moe.num_experts, x.d), "mlp_gate"},
      {memory("moe_permute", 2 * routed, 2 * routed), "swiglu"},
      {gemm("expert_gate", Tx, fe, x.d, local), "mlp_gate"},
      {gemm("expert_up", Tx, fe, x.d, local), "mlp_up"},
      {memory("expert_swiglu", 3 * hidden, 5 * hidden), "swiglu"},
      {gemm("expert_down", Tx, x.d, fe, local), "mlp_down"},
      {memory("moe_unpermute", routed + Tg * x.d * x.e, routed + Tg * x.d * x.e), "swiglu"}};
  if (moe.shared_expert_ffn_hidden > 0) {
    const double fs = moe.shared_expert_ffn_hidden / x.tp;
    const double shared = x.T * fs * x.e;
    named.push_back({gemm("shared_gate", x.T, fs, x.d), "mlp_gate"});
    named.push_back({gemm("shared_up", x.T, fs, x.d), "mlp_up"});
    named.push_back({memory("shared_swiglu", 3 * shared, 5 * shared), "swiglu"});
    named.push_back({gemm("shared_down", x.T, x.d, fs), "mlp_down"});
  }
  std::vector<Step> steps;
  for (Named& n : named) {
    const HostOps host = layer_host_ops(model.family, model.attention, n.like);
    n.step.forward.host_ops = host.forward;
    n.step.forward.host_ops_no_grad = host.forward_no_grad;
    n.step.backward_host_ops = host.backward;
    steps.push_back(n.step);
  }
  return steps;
}

/// layer_steps with the dense MLP (mlp_gate to mlp_down) replaced by moe_ffn_steps.
std::vector<Step> moe_layer_steps(const ModelSpec& model, const LayoutSpec& layout, const Dims& x) {
  std::vector<Step> steps = layer_steps(model, x);
  const auto at = [&steps](const std::string& name) {
    return std::find_if(steps.begin(), steps.end(),
                        [&name](const Step& s) { return s.forward.name == name; });
  };
  const auto first = at("mlp_gate");
  const std::vector<Step> ffn = moe_ffn_steps(model, layout, x);
  const auto next = steps.erase(first, at("mlp_down") + 1);
  steps.insert(next, ffn.begin(), ffn.end());
  return steps;
}

}  // namespace

std::vector<Op> layer_ops(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
                          Pass pass, Fp8Recipe recipe) {
  return ops_of(layer_steps(model, dims_of(model, layout, precision, recipe)), pass);
}

std::vector<Op> head_ops(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
                         Pass pass) {
  return ops_of(head_steps(model, dims_of(model, layout, precision)), pass);
}

std::vector<Op> embedding_ops(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
                              Pass pass) {
  return ops_of(embedding_steps(model, dims_of(model, layout, precision)), pass);
}

std::vector<Op> moe_layer_ops(const ModelSpec& model, const LayoutSpec& layout, Precision precision,
                              Pass pass) {
  return ops_of(moe_layer_steps(model, layout, dims_of(model, layout, precision)), pass);
}

double op_seconds(const DeviceDescription& device, const Op& op, Precision precision) {
  const Precision stored = storage_precision(precision);
  switch (op.kind) {
    case OpKind::Gemm:
      return gemm_seconds(device, op.m, op.n, op.k, op.fp8 ? Precision::Fp8 : stored, op.batch);
    case OpKind::Attention:
      return attention_seconds(device, op.attention, stored);
    case OpKind::MemoryBound:
      break;
  }
  return memory_bound_seconds(device, op.bytes);
}

PassSeconds layer_seconds(const DeviceDescription& device, const ModelSpec& model,
                          const LayoutSpec& layout, Precision precision, Fp8Recipe recipe) {
  return pass_seconds(device, precision,
                      layer_steps(model, dims_of(model, layout, precision, recipe)));
}

PassSeconds moe_layer_seconds(const DeviceDescription& device, const ModelSpec& model,
                              const LayoutSpec& layout, Precision precision) {
  return pass_seconds(device, precision,
                      moe_layer_steps(model, layout, dims_of(model, layout, precision)));
}

PassSeconds head_seconds(const DeviceDescription& device, const ModelSpec& model,
                         const LayoutSpec& layout, Precision precision) {
  return pass_seconds(device, precision, head_steps(model, dims_of(model, layout, precision)));
}

PassSeconds embedding_seconds(const DeviceDescription& device, const ModelSpec& model,
                              const LayoutSpec& layout, Precision precision) {
  return pass_seconds(device, precision, embedding_steps(model, dims_of(model, layout, precision)));
}

double fp8_copies_bytes_per_element(Fp8Recipe recipe, Fp8Operand operand) {
  double scales = 0;  // σ, scale bytes per element of one fp8 copy
  if (recipe == Fp8Recipe::Blockwise)
    scales = operand == Fp8Operand::Weight ? 4.0 / 16384 : 4.0 / 128;
  if (recipe == Fp8Recipe::Mxfp8) scales = 1.0 / 32;
  return 2 * (1 + scales);
}

double fp8_cast_bytes_per_element(Fp8Recipe recipe, Fp8Operand operand) {
  const double amax_pass = recipe == Fp8Recipe::Tensorwise ? 2 : 0;
  return 2 + amax_pass + fp8_copies_bytes_per_element(recipe, operand);
}

Fp8CastBytes fp8_cast_bytes(double m, double n, double k, Fp8Recipe recipe, double microbatches) {
  const auto bytes = [&](Fp8Operand operand) {
    return fp8_cast_bytes_per_element(recipe, operand);
  };
  return {m * k * bytes(Fp8Operand::Activation) + k * n * bytes(Fp8Operand::Weight) / microbatches,
          m * n * bytes(Fp8Operand::Activation)};
}

double optimizer_seconds(const DeviceDescription& device, double params_per_gpu) {
  return memory_bound_seconds(device, kAdamBytesPerParam * params_per_gpu);
}

}  // namespace dtwin
