#!/usr/bin/env python3
"""Single-rank training step: `dtwin train` (LibTorch C++) against a plain PyTorch eager loop
of the same LLaMA, batch and optimizer on this machine. The project's .venv runs the PyTorch
whose LibTorch dtwin is built against, so both execute the same ATen kernels. PyTorch runs with
each intra-op thread count from 1 to the core count, each in a fresh interpreter; the best is
the reference. Prints a Markdown table for README and where dtwin's step time goes.

Usage: .venv/bin/python bench/train_vs_pytorch.py [path/to/dtwin] [steps]
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import torch
import torch.nn.functional as F

DTWIN = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--pytorch" else "build/cli/dtwin"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] != "--pytorch" else 16
SCENARIO = "scenarios/quickstart.yaml"
# The quickstart model on one rank: vocab 4096, d 288, 6 layers, 6 heads, ffn 768, seq 256,
# 4 microbatches of 1 sequence per step, AdamW.
V, D, L, H, FFN, S, M, B = 4096, 288, 6, 6, 768, 256, 4, 1
THREADS = os.cpu_count()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        self.wq, self.wk, self.wv, self.wo = lin(D, D), lin(D, D), lin(D, D), lin(D, D)
        self.w1, self.w3, self.w2 = lin(D, FFN), lin(D, FFN), lin(FFN, D)
        self.attn_norm = torch.nn.Parameter(torch.ones(D))
        self.mlp_norm = torch.nn.Parameter(torch.ones(D))

    @staticmethod
    def norm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        heads = lambda t: t.view(b, s, H, D // H).transpose(1, 2)
        rot = lambda t: t * cos + torch.cat((-t[..., D // H // 2:], t[..., : D // H // 2]), -1) * sin
        h = self.norm(x, self.attn_norm)
        q, k, v = rot(heads(self.wq(h))), rot(heads(self.wk(h))), heads(self.wv(h))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(att.transpose(1, 2).reshape(b, s, D))
        h = self.norm(x, self.mlp_norm)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, D)
        self.layers = torch.nn.ModuleList(Block() for _ in range(L))
        self.norm = torch.nn.Parameter(torch.ones(D))
        self.head = torch.nn.Linear(D, V, bias=False)
        inv = 10000.0 ** (-torch.arange(0, D // H, 2).float() / (D // H))
        ang = torch.outer(torch.arange(S).float(), inv)
        full = torch.cat((ang, ang), -1)
        self.cos, self.sin = full.cos(), full.sin()

    def forward(self, ids, targets):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin)
        logits = self.head(Block.norm(x, self.norm))
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))


def pytorch_step_times(threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = Llama()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1)
    times = []
    for _ in range(STEPS):
        start = time.perf_counter()
        for _ in range(M):
            ids = torch.randint(0, V, (B, S + 1))
            (model(ids[:, :-1], ids[:, 1:]) / M).backward()
        opt.step()
        opt.zero_grad()
        times.append(time.perf_counter() - start)
    return times[1:]


def pytorch_median(threads):
    """Median step seconds of the eager loop with `threads` intra-op threads, in a fresh
    interpreter."""
    out = subprocess.run([sys.executable, __file__, "--pytorch", str(threads)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def dtwin_run():
    with tempfile.TemporaryDirectory() as out:
        args = [DTWIN, "train", SCENARIO, "-o", out, "--set", f"training.steps={STEPS}",
                "--set", "layout.pp=1", "--set", "cluster.ranks_per_device=1"]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "loss.csv")) as f:
            seconds = sorted(float(row.split(",")[3]) for row in f.read().splitlines()[2:])
        with open(os.path.join(out, "measured.trace.json")) as f:
            trace = json.load(f)["traceEvents"]
    per_kind = defaultdict(float)
    steps = {e["args"]["step"] for e in trace if e["ph"] == "X"}
    for e in trace:
        if e["ph"] == "X" and e["args"]["step"] != min(steps):
            per_kind[e["args"]["kind"]] += e["dur"] / 1e6 / (len(steps) - 1)
    return seconds[len(seconds) // 2], per_kind


if len(sys.argv) > 2 and sys.argv[1] == "--pytorch":
    times = pytorch_step_times(int(sys.argv[2]))
    print(sorted(times)[len(times) // 2])
    sys.exit(0)

torch_steps = [(threads, pytorch_median(threads)) for threads in range(THREADS, 0, -1)]
dtwin_step, per_kind = dtwin_run()
best = min(step for _, step in torch_steps)
tokens = M * B * S
print("| implementation | step s | tokens/s |")
print("|---|---|---|")
for threads, step in torch_steps:
    print(f"| PyTorch {torch.__version__} eager, {threads} intra-op threads "
          f"(median of {STEPS - 1}) | {step:.3f} | {tokens / step:.0f} |")
print(f"| dtwin train, 1 rank, runtime.threads auto = {THREADS} (median of {STEPS - 1}) "
      f"| {dtwin_step:.3f} | {tokens / dtwin_step:.0f} |")
print(f"\nratio dtwin / best PyTorch = {dtwin_step / best:.3f}")
print("\ndtwin step time by action kind (s per step):")
for kind, seconds in sorted(per_kind.items(), key=lambda kv: -kv[1]):
    print(f"  {kind:10s} {seconds:.4f}  ({seconds / dtwin_step:.0%})")
