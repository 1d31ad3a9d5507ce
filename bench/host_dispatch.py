#!/usr/bin/env python3
"""Host cost of issuing a transformer layer's operators from eager PyTorch: the microbenchmark
behind the device descriptions' `host_op_overhead` and `host_backward_op_overhead`
(models/devices/*.yaml, models/cost/layer_ops.hpp).

A GPU runs a training framework's kernels asynchronously: the host thread walks the Python
model, and each framework operator costs host time (the Python call, PyTorch's dispatcher,
autograd bookkeeping, the kernel launch) whether or not the device is busy. When the kernels are
short, the device waits for the host. This script measures that host time per operator on the
CPU, where it is the same code path up to the launch itself: it runs the operator sequence of
Megatron-LM's GPT layer (megatron/model/transformer.py, ParallelTransformerLayer with fused
LayerNorm, fused scale-mask-softmax, attention dropout, bias-GeLU and bias-dropout-add fusions,
tensor parallelism 1) on tensors so small (s = 4, b = 1, h = 8) that the kernels themselves take
well under a microsecond, and counts the operators PyTorch dispatches (views included) with
TorchDispatchMode.

Printed per layer and pass: operators dispatched, host microseconds, microseconds per operator
(median of REPEATS timings of ITERS layers each, in the thread's CPU time, so that other
processes on the machine do not count). Forward as in a recomputed forward (autograd
recording), backward as the autograd engine runs it.

--json prints only the counts, as {"FAMILY-ATTENTION": {"OPERATOR": [forward, forward without
grad, backward]}}: tests/test_host_queue.cpp checks models/cost/host_ops.cpp against them.

With --device cuda the same layer runs on a GPU's tensors: the thread's CPU time then holds
the kernel launches (cudaLaunchKernel) and the CUDA caching allocator, which is what a GPU
host's `host_op_overhead` is; the GPU keeps up with launches of kernels this small, so the
host never waits for it (bench/gpu_acceptance.sh host runs it on the GPU machine).

Usage: .venv/bin/python bench/host_dispatch.py [--repeats 7] [--iters 400] [--json]
                                               [--device cpu|cuda]
"""
import argparse
import json
import platform
import statistics
import time

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode


class Counter(TorchDispatchMode):
    """Counts the ATen operators dispatched while it is active."""

    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


class LayerNormFunction(torch.autograd.Function):
    """Apex's FusedLayerNormAffineFunction as Megatron-LM calls it: one kernel each way."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        out, mean, rstd = torch.native_layer_norm(x, (x.shape[-1],), weight, bias, 1e-5)
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias, mean, rstd = ctx.saved_tensors
        return torch.ops.aten.native_layer_norm_backward(
            grad, x, (x.shape[-1],), mean, rstd, weight, bias, [True, True, True])


class LinearFunction(torch.autograd.Function):
    """Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication: the GEMM forward, and the
    dgrad and wgrad GEMMs (and the bias gradient) in its backward."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.use_bias = bias is not None
        out = torch.matmul(x, weight.t())
        return out + bias if bias is not None else out

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad_input = grad.matmul(weight)
        flat_grad = grad.reshape(-1, grad.shape[-1])
        grad_weight = flat_grad.t().matmul(x.reshape(-1, x.shape[-1]))
        grad_bias = flat_grad.sum(dim=0) if ctx.use_bias else None
        return grad_input, grad_weight, grad_bias


class ScaleMaskSoftmaxFunction(torch.autograd.Function):
    """Megatron-LM's ScaledUpperTriangMaskedSoftmax: one fused kernel each way (a softmax
    stands in for the scale, causal mask and softmax it fuses)."""

    @staticmethod
    def forward(ctx, scores):
        probs = torch._softmax(scores, -1, False)
        ctx.save_for_backward(probs)
        return probs

    @staticmethod
    def backward(ctx, grad):
        (probs,) = ctx.saved_tensors
        return torch._softmax_backward_data(grad, probs, -1, probs.dtype)


@torch.jit.script
def bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(bias + y, approximate="tanh")


@torch.jit.script
def bias_dropout_add_fused(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor,
                           prob: float) -> torch.Tensor:
    return residual + torch.nn.functional.dropout(x + bias, p=prob, training=True)


class RngTracker:
    """Megatron's CUDA RNG tracker fork around the attention dropout: the default generator's
    state saved, the model-parallel generator's state set, and both swapped back after (on CPU
    tensors the CPU generator stands in for the CUDA one)."""

    def __init__(self):
        cuda = torch.get_default_device().type == "cuda"
        self.get = torch.cuda.get_rng_state if cuda else torch.get_rng_state
        self.set = torch.cuda.set_rng_state if cuda else torch.set_rng_state
        self.state = self.get()

    def __enter__(self):
        self.saved = self.get()
        self.set(self.state)

    def __exit__(self, *exc):
        self.state = self.get()
        self.set(self.saved)


def gpt2_sections(h, heads, s, b):
    """Megatron-LM's GPT layer as its Python issues operators ([s, b, h] activations), cut into
    the operators of dtwin's layer_ops (models/cost/layer_ops.hpp) for gpt2: (name, function,
    input shapes) with each function taking its inputs and returning its output. As
    megatron/model/transformer.py runs it: Apex's fused LayerNorm, the linear layers and the
    fused scale-mask-softmax as autograd Functions, the bias-GeLU and bias-dropout-add fusions
    as TorchScript functions, the attention dropout inside the RNG tracker's fork."""
    hn = h // heads
    ln1, ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
    qkv = torch.nn.Linear(h, 3 * h)
    dense = torch.nn.Linear(h, h, bias=False)
    fc1 = torch.nn.Linear(h, 4 * h, bias=False)
    fc2 = torch.nn.Linear(4 * h, h, bias=False)
    dense_bias, fc1_bias, fc2_bias = (torch.nn.Parameter(torch.zeros(n)) for n in (h, 4 * h, h))
    tracker = RngTracker()

    def project_qkv(x):
        return LinearFunction.apply(x, qkv.weight, qkv.bias).view(s, b, heads, 3 * hn)

    def attention(mixed):
        q, k, v = (t.reshape(s, b * heads, hn) for t in torch.split(mixed, hn, dim=-1))
        buffer = torch.empty(b * heads, s, s, dtype=q.dtype)
        scores = torch.baddbmm(buffer, q.transpose(0, 1), k.transpose(0, 1).transpose(1, 2),
                               beta=0.0, alpha=1.0)
        probs = ScaleMaskSoftmaxFunction.apply(scores.view(b, heads, s, s))
        with tracker:
            probs = F.dropout(probs, p=0.1, training=True)
        context = torch.bmm(probs.view(b * heads, s, s), v.transpose(0, 1))
        context = context.view(b, heads, s, hn).permute(2, 0, 1, 3).contiguous()
        return context.view(s, b, h)

    def bias_dropout_add(bias):
        return lambda x, residual: bias_dropout_add_fused(x, bias.expand_as(residual), residual,
                                                          0.1)

    stream, hidden = (s, b, h), (s, b, 4 * h)
    return [
        ("input_norm", lambda x: LayerNormFunction.apply(x, ln1.weight, ln1.bias), [stream]),
        ("qkv", project_qkv, [stream]),
        ("attention", attention, [(s, b, heads, 3 * hn)]),
        ("attention_out", lambda x: LinearFunction.apply(x, dense.weight, None), [stream]),
        ("attention_residual", bias_dropout_add(dense_bias), [stream, stream]),
        ("mlp_norm", lambda x: LayerNormFunction.apply(x, ln2.weight, ln2.bias), [stream]),
        ("mlp_fc1", lambda x: LinearFunction.apply(x, fc1.weight, None), [stream]),
        ("gelu", lambda x: bias_gelu(fc1_bias, x), [hidden]),
        ("mlp_fc2", lambda x: LinearFunction.apply(x, fc2.weight, None), [hidden]),
        ("mlp_residual", bias_dropout_add(fc2_bias), [stream, stream]),
    ]


def flash_attention(h, heads, s, b):
    """The attention core as one fused kernel (torch SDPA, as FlashAttention is called): the
    [s, b, heads, 3·hn] projection split into query, key and value laid out [b, heads, s, hn],
    and the context back to [s, b, h]."""
    hn = h // heads

    def attention(mixed):
        q, k, v = (t.permute(1, 2, 0, 3) for t in torch.split(mixed, hn, dim=-1))
        context = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
        return context.permute(2, 0, 1, 3).reshape(s, b, h)

    return ("attention", attention, [(s, b, heads, 3 * hn)])


def llama_sections(h, heads, s, b):
    """A LLaMA layer as Megatron-Core issues operators: a fused RMSNorm (the fused LayerNorm
    Function stands in for it), the linear layers as autograd Functions (QKV without bias),
    rotary embedding on q and k, flash attention, SwiGLU MLP."""
    hn, f = h // heads, 4 * h
    norm1, norm2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
    qkv, out = torch.nn.Linear(h, 3 * h, bias=False), torch.nn.Linear(h, h, bias=False)
    gate, up, down = (torch.nn.Linear(*shape, bias=False) for shape in ((h, f), (h, f), (f, h)))
    freqs = torch.randn(s, 1, 1, hn)
    cos, sin = freqs.cos(), freqs.sin()

    def linear(module):
        return lambda x: LinearFunction.apply(x, module.weight, None)

    def norm(module):
        return lambda x: LayerNormFunction.apply(x, module.weight, module.bias)

    def rotary(mixed):
        # q and k rotated, v as it is; the cat that hands them on together is one operator more
        # than Megatron-Core runs
        q, k, v = torch.split(mixed, hn, dim=-1)

        def rotate(t):
            t1, t2 = torch.chunk(t, 2, dim=-1)
            return t * cos + torch.cat((-t2, t1), dim=-1) * sin

        return torch.cat([rotate(q), rotate(k), v], dim=-1)

    def residual(x, stream):
        return stream + x

    stream, hidden = (s, b, h), (s, b, f)
    return [
        ("input_norm", norm(norm1), [stream]),
        ("qkv", lambda x: linear(qkv)(x).view(s, b, heads, 3 * hn), [stream]),
        ("rotary", rotary, [(s, b, heads, 3 * hn)]),
        flash_attention(h, heads, s, b),
        ("attention_out", linear(out), [stream]),
        ("attention_residual", residual, [stream, stream]),
        ("mlp_norm", norm(norm2), [stream]),
        ("mlp_gate", linear(gate), [stream]),
        ("mlp_up", linear(up), [stream]),
        ("swiglu", lambda g, u: F.silu(g) * u, [hidden, hidden]),
        ("mlp_down", linear(down), [hidden]),
        ("mlp_residual", residual, [stream, stream]),
    ]


def chained(sections):
    """The whole layer: the sections in order, each residual add taking the stream before its
    branch."""
    def layer(x):
        residual = x
        for name, fn, shapes in sections:
            x = fn(x, residual) if len(shapes) == 2 else fn(x)
            if len(shapes) == 2:
                residual = x
        return x
    return layer


def timed(fn, iters, repeats):
    """Median CPU seconds of the calling thread per call of fn over `repeats` timings of `iters`
    calls (thread CPU time: what the host spends, whatever else shares its cores)."""
    runs = []
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(iters):
            fn()
        runs.append((time.thread_time() - start) / iters)
    return statistics.median(runs)


def count_ops(fn):
    """ATen operators that fn() dispatches."""
    with Counter() as counted:
        fn()
    return counted.ops


def section_counts(fn, shapes):
    """[forward, forward without grad, backward] operators of one section run on fresh leaves;
    the backward less the accumulation into each input leaf, which the whole layer does not run."""
    inputs = [torch.randn(*shape, requires_grad=True) for shape in shapes]
    for _ in range(5):  # TorchScript's profiling executor settles on its plan in the first runs
        fn(*inputs).sum().backward()
        with torch.no_grad():
            fn(*inputs)
    forward = count_ops(lambda: fn(*inputs))
    with torch.no_grad():
        no_grad = count_ops(lambda: fn(*inputs))
    out = fn(*inputs)
    out_grad = torch.ones_like(out)
    backward = count_ops(lambda: out.backward(out_grad)) - len(inputs)
    return [forward, no_grad, backward]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iters", type=int, default=400)
    parser.add_argument("--json", action="store_true", help="print the counts only, as JSON")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="where the layer's tensors live (cuda: a GPU host's launch costs)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no GPU visible to torch")
    torch.set_num_threads(1)
    torch.set_default_device(args.device)
    s, b, h, heads = 4, 1, 8, 2
    sections = gpt2_sections(h, heads, s, b)
    gpt2_flash = [flash_attention(h, heads, s, b) if name == "attention" else (name, fn, shapes)
                  for name, fn, shapes in sections]
    llama = llama_sections(h, heads, s, b)
    eager_core = next(section for section in sections if section[0] == "attention")
    llama_eager = [eager_core if name == "attention" else (name, fn, shapes)
                   for name, fn, shapes in llama]
    families = (("gpt2-eager", "gpt2, eager attention (Megatron-LM's fused softmax)", sections),
                ("gpt2-flash", "gpt2, flash attention", gpt2_flash),
                ("llama-flash", "llama (Megatron-Core), flash attention", llama),
                ("llama-eager", "llama (Megatron-Core), eager attention (the fused softmax)",
                 llama_eager))
    counts = {key: {name: section_counts(fn, shapes) for name, fn, shapes in family}
              for key, _, family in families}
    if args.json:
        print(json.dumps(counts, indent=1))
        return
    layer = chained(sections)
    x = torch.randn(s, b, h, requires_grad=True)
    grad = torch.ones(s, b, h)

    def forward_no_grad():
        with torch.no_grad():
            layer(x)

    def backward_seconds():
        y = layer(x)
        start = time.thread_time()
        y.backward(grad)
        return time.thread_time() - start

    device = torch.cuda.get_device_name() if args.device == "cuda" else "CPU tensors"
    print(f"# torch {torch.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()} ({platform.processor() or 'cpu'}), 1 thread, {device}; "
          f"s={s} b={b} h={h} heads={heads}")
    for key, title, _ in families:
        print(f"\n{title}\n")
        print("| operator | forward ops | forward ops without grad | backward ops |")
        print("|---|---|---|---|")
        for name, (forward, no_grad, backward) in counts[key].items():
            print(f"| {name} | {forward} | {no_grad} | {backward} |")

    whole = {"forward": count_ops(lambda: layer(x)), "forward without grad": 0, "backward": 0}
    with torch.no_grad():
        whole["forward without grad"] = count_ops(lambda: layer(x))
    y = layer(x)
    whole["backward"] = count_ops(lambda: y.backward(grad))

    for _ in range(50):  # warm-up
        backward_seconds()
    seconds = {
        "forward": timed(lambda: layer(x), args.iters, args.repeats),
        "forward without grad": timed(forward_no_grad, args.iters, args.repeats),
        "backward": statistics.median(
            statistics.mean(backward_seconds() for _ in range(args.iters))
            for _ in range(args.repeats)),
    }
    print("\n| whole layer | operators dispatched | host µs | host µs per operator |")
    print("|---|---|---|---|")
    for name, ops in whole.items():
        print(f"| {name} | {ops} | {seconds[name] * 1e6:.1f} | {seconds[name] * 1e6 / ops:.2f} |")


if __name__ == "__main__":
    main()
