#!/usr/bin/env python3
"""Single-rank training step: `dtwin train` (LibTorch C++) against a plain PyTorch eager loop
of the same LLaMA (RMSNorm, rotate-half RoPE, SwiGLU, no biases, causal attention computed as
the scenario's model.attention says: explicit matmul and softmax, or scaled_dot_product_attention
for flash), batch and AdamW on this machine, on the CPU or on a CUDA GPU.
The project's .venv runs the PyTorch whose LibTorch dtwin is built against, so both execute the
same ATen kernels.

The model dimensions, microbatches, micro-batch size, learning rate and precision come from the
scenario (--scenario, default scenarios/quickstart.yaml) with the --set overrides, which are also
passed on to `dtwin train` (with layout.pp=1 and cluster.ranks_per_device=1 before them, for one
rank). The device is --device, by default the scenario's runtime.device.

- cpu: PyTorch runs with each intra-op thread count from the core count down to 1, each in a
  fresh interpreter; the best is the reference. bf16 runs the forward under
  torch.autocast("cpu", dtype=torch.bfloat16).
- cuda: the eager model lives on the GPU, in a fresh interpreter; with training.precision bf16
  the forward runs under torch.autocast("cuda", dtype=torch.bfloat16) with fp32 parameters,
  AdamW state and loss (the standard mixed-precision loop). Steps are timed between
  torch.cuda.synchronize() calls.

Both accumulate gradients over the microbatches and take one AdamW step (lr from the scenario,
betas 0.9/0.95, eps 1e-8, weight decay 0.1). Step 1 of each is warm-up and left out; the figures
are medians of the other steps (dtwin's from the tokens_per_s column of its loss.csv). MFU =
tokens/s x (6N + 12 L d s) / peak (Chowdhery et al. 2022, PaLM, appendix B), with N the
parameters less the token embedding (the untied LM head stays in N), as models/cost/cost_model.cpp's
non_embedding_params(); peak is --peak-flops, by default 989e12 on cuda (H100 SXM, bf16 dense)
and the scenario's cluster.device.peak_flops on the CPU. Prints a Markdown table for README and
where dtwin's step time goes.

Usage:
  .venv/bin/python bench/train_vs_pytorch.py [path/to/dtwin] [steps] [--set KEY=VALUE ...]
  .venv/bin/python bench/train_vs_pytorch.py build/cli/dtwin 16 --scenario scenarios/h100-single.yaml
  .venv/bin/python bench/train_vs_pytorch.py build/cli/dtwin 16 --scenario scenarios/h100-124m.yaml
Options: --scenario PATH, --set KEY=VALUE (repeatable), --device cpu|cuda, --peak-flops FLOP/s
(a number or a quantity such as 989TFLOP/s). --pytorch THREADS is internal: one eager run.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import torch
import torch.nn.functional as F

THREADS = os.cpu_count()
WARMUP = 1  # leading steps left out of the medians, on both sides
H100_BF16_PEAK = 989e12  # H100 SXM datasheet, BF16 Tensor Core dense


# ----------------------------------------------------------------------------- scenario

def resolved_scenario(dtwin, scenario, sets):
    """The scenario's values as dtwin loads them (`dtwin keys --resolved`: defaults applied,
    quantities in base units, a device description's peak filled in), with the --set overrides."""
    cmd = [dtwin, "keys", "--resolved", scenario]
    for assignment in sets:
        cmd += ["--set", assignment]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"train_vs_pytorch.py: {' '.join(cmd)}: {run.stderr.strip()}")
    return json.loads(run.stdout)


class Config:
    """What the eager loop needs, from the scenario and the --set overrides."""

    def __init__(self, args):
        peak = [f"cluster.device.peak_flops={args.peak_flops}"] if args.peak_flops else []
        sc = resolved_scenario(args.dtwin, args.scenario, args.set + peak)
        m, layout, training = sc["model"], sc["layout"], sc["training"]
        if m["family"] != "llama":
            raise SystemExit("train_vs_pytorch.py: the eager reference is a LLaMA; "
                             f"model.family is {m['family']}")
        self.V, self.D, self.L, self.H, self.FFN, self.S = (
            m[k] for k in ("vocab_size", "d_model", "n_layers", "n_heads", "ffn_hidden", "seq_len"))
        self.M = layout["microbatches"]
        self.B = layout["micro_batch_size"]
        self.lr = training["lr"]
        self.precision = training["precision"]
        self.attention = m["attention"]
        self.device = args.device or sc["runtime"]["device"]
        self.peak = (sc["cluster"]["device"]["peak_flops"]
                     if args.peak_flops or self.device != "cuda" else H100_BF16_PEAK)
        self.tokens = self.M * self.B * self.S  # per step

    def non_embedding_params(self):
        """N of the MFU formula, as CostModel::non_embedding_params() counts it for llama: every
        parameter but the token embedding V d (the untied LM head V d, the final norm d and each
        layer's 4d^2 + 3 d ffn + 2d stay)."""
        D, F_ = self.D, self.FFN
        return self.L * (4 * D * D + 3 * D * F_ + 2 * D) + D + self.V * D

    def flops_per_token(self):
        return 6 * self.non_embedding_params() + 12 * self.L * self.D * self.S


# ----------------------------------------------------------------------------- eager PyTorch

class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        D, FFN = c.D, c.FFN
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        self.wq, self.wk, self.wv, self.wo = lin(D, D), lin(D, D), lin(D, D), lin(D, D)
        self.w1, self.w3, self.w2 = lin(D, FFN), lin(D, FFN), lin(FFN, D)
        self.attn_norm = torch.nn.Parameter(torch.ones(D))
        self.mlp_norm = torch.nn.Parameter(torch.ones(D))
        self.H = c.H
        self.sdpa = c.attention == "flash"

    @staticmethod
    def norm(x, w):
        """RMSNorm computed in fp32 and returned in x's dtype (as dtwin's RMSNorm)."""
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x) * w

    def forward(self, x, cos, sin):
        b, s, d = x.shape
        hd = d // self.H
        heads = lambda t: t.view(b, s, self.H, hd).transpose(1, 2)
        # Rotate-half RoPE in the projection's dtype (bf16 under autocast), as dtwin's tables.
        rot = lambda t: (t * cos.to(t.dtype)
                         + torch.cat((-t[..., hd // 2:], t[..., : hd // 2]), -1) * sin.to(t.dtype))
        h = self.norm(x, self.attn_norm)
        q, k, v = rot(heads(self.wq(h))), rot(heads(self.wk(h))), heads(self.wv(h))
        if self.sdpa:  # model.attention: flash, as dtwin's at::scaled_dot_product_attention
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # eager: explicit matmul, mask and softmax, as dtwin's
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            future = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
            att = torch.softmax(scores.masked_fill(future, float("-inf")), -1) @ v
        x = x + self.wo(att.transpose(1, 2).reshape(b, s, d))
        h = self.norm(x, self.mlp_norm)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.V = c.V
        self.embed = torch.nn.Embedding(c.V, c.D)
        self.layers = torch.nn.ModuleList(Block(c) for _ in range(c.L))
        self.norm = torch.nn.Parameter(torch.ones(c.D))
        self.head = torch.nn.Linear(c.D, c.V, bias=False)
        hd = c.D // c.H
        inv = 10000.0 ** (-torch.arange(0, hd, 2).float() / hd)
        ang = torch.outer(torch.arange(c.S).float(), inv)
        full = torch.cat((ang, ang), -1)
        self.register_buffer("cos", full.cos(), persistent=False)
        self.register_buffer("sin", full.sin(), persistent=False)

    def forward(self, ids, targets):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin)
        logits = self.head(Block.norm(x, self.norm))
        return F.cross_entropy(logits.float().reshape(-1, self.V), targets.reshape(-1))  # fp32 loss


def pytorch_step_times(c, steps, threads):
    """Seconds of each step after the warm-up, of the eager loop on c.device."""
    if threads > 0:
        torch.set_num_threads(threads)
    dev = torch.device(c.device)
    torch.manual_seed(0)
    model = Llama(c).to(dev)  # fp32 parameters; AdamW's state follows them
    opt = torch.optim.AdamW(model.parameters(), lr=c.lr, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    autocast = lambda: torch.autocast(dev.type, dtype=torch.bfloat16,
                                      enabled=c.precision == "bf16")
    times = []
    sync()
    for _ in range(steps):
        start = time.perf_counter()
        for _ in range(c.M):
            ids = torch.randint(0, c.V, (c.B, c.S + 1), device=dev)
            with autocast():
                loss = model(ids[:, :-1], ids[:, 1:])
            (loss / c.M).backward()
        opt.step()
        opt.zero_grad()
        sync()
        times.append(time.perf_counter() - start)
    n = sum(p.numel() for p in model.parameters()) - model.embed.weight.numel()
    return times[WARMUP:], n


def pytorch_run(args, threads):
    """Median step seconds of the eager loop in a fresh interpreter (`threads` intra-op threads,
    0 = PyTorch's default), and the model's N."""
    cmd = [sys.executable, os.path.abspath(__file__), args.dtwin, str(args.steps),
           "--pytorch", str(threads), "--scenario", args.scenario, "--device", args.cfg.device]
    for assignment in args.set:
        cmd += ["--set", assignment]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["median_s"], result["n"]


# ----------------------------------------------------------------------------- dtwin

def dtwin_run(args):
    """Median tokens/s and step seconds of `dtwin train` on one rank after the warm-up, and its
    step time per action kind from the measured trace."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [args.dtwin, "train", args.scenario, "-o", out,
               "--set", f"training.steps={args.steps}",
               "--set", "layout.pp=1", "--set", "cluster.ranks_per_device=1"]
        if args.device:  # run dtwin where the eager loop runs
            cmd += ["--set", f"runtime.device={args.device}"]
        for assignment in args.set:
            cmd += ["--set", assignment]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "loss.csv")) as f:
            rows = [line.split(",") for line in f.read().splitlines()]
        col = {name: i for i, name in enumerate(rows[0])}
        steps = rows[1 + WARMUP:]
        tokens_per_s = median([float(r[col["tokens_per_s"]]) for r in steps])
        seconds = median([float(r[col["seconds"]]) for r in steps])
        trace_path = os.path.join(out, "measured.trace.json")
        trace = []
        if os.path.exists(trace_path):
            with open(trace_path) as f:
                trace = json.load(f)["traceEvents"]
    per_kind = defaultdict(float)
    trace_steps = sorted({e["args"]["step"] for e in trace if e["ph"] == "X"})
    kept = set(trace_steps[WARMUP:])
    for e in trace:
        if e["ph"] == "X" and e["args"]["step"] in kept:
            per_kind[e["args"]["kind"]] += e["dur"] / 1e6 / len(kept)
    return tokens_per_s, seconds, per_kind


def median(values):
    return sorted(values)[len(values) // 2]


# ----------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(
        description="dtwin train against a PyTorch eager loop on one rank (CPU or CUDA GPU).")
    p.add_argument("dtwin", nargs="?", default="build/cli/dtwin", help="path to dtwin")
    p.add_argument("steps", nargs="?", type=int, default=16,
                   help="training steps of each run, the first being warm-up (default 16)")
    p.add_argument("--scenario", default="scenarios/quickstart.yaml",
                   help="scenario YAML (default scenarios/quickstart.yaml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key, for dtwin train --set and the eager model "
                        "(repeatable)")
    p.add_argument("--device", choices=("cpu", "cuda"),
                   help="where both run (default: the scenario's runtime.device)")
    p.add_argument("--peak-flops", metavar="FLOP/s",
                   help="peak for the MFU (default: 989e12 on cuda, H100 SXM bf16 dense; on the "
                        "CPU the scenario's cluster.device.peak_flops)")
    p.add_argument("--pytorch", type=int, metavar="THREADS", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steps <= WARMUP:
        p.error(f"steps must exceed the {WARMUP} warm-up step")
    if args.device == "cuda":
        require_cuda()
    if not os.path.isfile(args.scenario):
        p.error(f"--scenario {args.scenario}: no such file")
    args.cfg = Config(args)
    if args.cfg.device == "cuda":  # the scenario's runtime.device
        require_cuda()
    return args


def require_cuda():
    if not torch.cuda.is_available():
        print(f"train_vs_pytorch.py: device cuda requested, but PyTorch {torch.__version__} "
              "sees no CUDA GPU on this machine", file=sys.stderr)
        sys.exit(2)


def main():
    args = parse_args(sys.argv[1:])
    c = args.cfg
    if args.pytorch is not None:  # internal: one eager run in this fresh interpreter
        times, n = pytorch_step_times(c, args.steps, args.pytorch)
        print(json.dumps({"median_s": median(times), "n": n}))
        return

    if c.device == "cuda":
        runs = [(f"PyTorch {torch.__version__} eager, {torch.cuda.get_device_name(0)}", 0)]
    else:
        runs = [(f"PyTorch {torch.__version__} eager, {t} intra-op thread{'s' * (t > 1)}", t)
                for t in range(THREADS, 0, -1)]
    torch_steps = []
    for label, threads in runs:
        step, n = pytorch_run(args, threads)
        if n != c.non_embedding_params():
            raise SystemExit(f"train_vs_pytorch.py: the eager model has N = {n}, the formula "
                             f"{c.non_embedding_params()}")
        torch_steps.append((label, step))
    dtwin_tokens_per_s, dtwin_step, per_kind = dtwin_run(args)

    best = min(step for _, step in torch_steps)
    mfu = lambda tokens_per_s: tokens_per_s * c.flops_per_token() / c.peak
    measured = f"median of {args.steps - WARMUP}"
    print(f"{args.scenario}{''.join(' --set ' + s for s in args.set)}: vocab {c.V}, d {c.D}, "
          f"{c.L} layers, {c.H} heads, ffn {c.FFN}, seq {c.S}, {c.M} microbatches of {c.B}, "
          f"{c.precision}, {c.device}; N = {c.non_embedding_params():,} (without the token "
          f"embedding), {c.flops_per_token():.4g} FLOP/token, peak {c.peak:.4g} FLOP/s\n")
    print("| implementation | step s | tokens/s | MFU |")
    print("|---|---|---|---|")
    for label, step in torch_steps:
        print(f"| {label} ({measured}) | {step:.4f} | {c.tokens / step:.0f} "
              f"| {mfu(c.tokens / step):.1%} |")
    where = ("cuda" if c.device == "cuda" else f"runtime.threads auto = {THREADS}")
    print(f"| dtwin train, 1 rank, {where} ({measured}) | {dtwin_step:.4f} "
          f"| {dtwin_tokens_per_s:.0f} | {mfu(dtwin_tokens_per_s):.1%} |")
    print(f"\ndtwin tokens/s / best PyTorch tokens/s = {dtwin_tokens_per_s * best / c.tokens:.3f}"
          f" (step time dtwin / best PyTorch = {dtwin_step / best:.3f})")
    if per_kind:
        print("\ndtwin step time by action kind (s per step):")
        for kind, seconds in sorted(per_kind.items(), key=lambda kv: -kv[1]):
            print(f"  {kind:10s} {seconds:.4f}  ({seconds / dtwin_step:.0%})")


if __name__ == "__main__":
    main()
