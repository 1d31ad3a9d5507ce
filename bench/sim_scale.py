#!/usr/bin/env python3
"""Simulator scale benchmark: wall time and peak memory of `dtwin simulate` on the 7B scenario
and on layouts of 1024 and 4096 GPUs, LLaMA-2 7B (DP x PP) and GPT-3 175B (TP x PP x DP), a
DeepSeek-V3-size MoE on 2048 GPUs and Llama 3 405B on 16384 GPUs. Prints a Markdown table
(README, "Simulator benchmark").

Usage: python3 bench/sim_scale.py [path/to/dtwin]
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

DTWIN = sys.argv[1] if len(sys.argv) > 1 else "build/cli/dtwin"
CASES = [
    ("LLaMA-2 7B, 32 A100 (dp 4 x pp 8, m 32)", "scenarios/llama2-7b-a100.yaml", []),
    ("LLaMA-2 7B, 1024 A100 (dp 128 x pp 8, m 16)", "scenarios/llama2-7b-1024gpu.yaml", []),
    ("LLaMA-2 7B, 1024 A100, message-level all-reduce", "scenarios/llama2-7b-1024gpu.yaml",
     ["--collectives", "message"]),
    ("LLaMA-2 7B, 4096 A100 (dp 512 x pp 8, m 16)", "scenarios/llama2-7b-1024gpu.yaml",
     ["--set", "layout.dp=512", "--set", "cluster.nodes=512"]),
    ("GPT-3 175B, 1024 A100 (tp 8 x pp 16 x dp 8, m 192)", "scenarios/gpt3-175b-4096gpu.yaml",
     ["--set", "layout.dp=8", "--set", "layout.microbatches=192", "--set", "cluster.nodes=128"]),
    ("GPT-3 175B, 4096 A100 (tp 8 x pp 16 x dp 32, m 48)", "scenarios/gpt3-175b-4096gpu.yaml", []),
    ("DeepSeek-V3-size MoE, 2048 H800 (pp 16 x dp 128, ep 64, DualPipe-V, m 120)",
     "scenarios/deepseek-v3-2048gpu.yaml", []),
    ("Llama 3 405B, 16384 H100 (tp 8 x pp 16 x dp 128, m 16)",
     "scenarios/llama3-405b-16384gpu.yaml", []),
]


def run(scenario, extra):
    """Runs one simulation in a child; returns (wall s, peak RSS MiB, summary dict)."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.execv(DTWIN, [DTWIN, "simulate", scenario, "--allow-oom", "-o", out] + extra)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"dtwin simulate {scenario} failed")
        with open(os.path.join(out, "predicted.summary.json")) as f:
            summary = json.load(f)
        return wall, usage.ru_maxrss / 1024, summary


print("| layout | ranks | wall s | peak MiB | predicted step s | bubble | MFU |")
print("|---|---|---|---|---|---|---|")
for name, scenario, extra in CASES:
    wall, rss, s = run(scenario, extra)
    print(f"| {name} | {len(s['ranks'])} | {wall:.2f} | {rss:.0f} | {s['step_time_s']:.3f} "
          f"| {s['bubble_fraction']:.1%} | {s.get('mfu', 0):.1%} |")
