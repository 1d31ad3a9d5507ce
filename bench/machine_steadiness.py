#!/usr/bin/env python3
"""How steady is this machine's speed, as a predicted-against-measured comparison needs it?
A profile is timed a minute or so before the training it predicts, so any drift of the
machine's speed between the two lands in the step-time error. One thread alternates two
workloads in windows of `window` seconds each: the quickstart's largest GEMM shape
(256 x 288 x 864 fp32, compute-bound, in the cache) and an elementwise add of two 32 MiB fp32
vectors (memory-bound: 96 MiB moved per add). Prints, for each, the rate's mean and, for blocks
of 1, 5, 15 and 30 consecutive windows, the standard deviation and range of the block means
relative to the mean (a block of 30 windows of 1 s spans a minute of wall time, both workloads
together). A dtwin pass is partly GEMMs and partly memory-bound elementwise work (RMSNorm,
SwiGLU, softmax, AdamW): it drifts between the two rows' figures. Then, for blocks of 10
windows, how far a block's rate is from the block k = 1, 2, 3 blocks before it (a profile
timed that long before the training) and from the mean of the blocks k before and k after it
(a profile timed before and after): root mean square, relative to the mean.

Usage: .venv/bin/python bench/machine_steadiness.py [seconds=300] [window=1]
"""
import statistics
import sys
import time

import torch

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 300
WINDOW = float(sys.argv[2]) if len(sys.argv) > 2 else 1


def rate(work):
    """Runs `work` (returns the units it did) for WINDOW seconds; returns units per second."""
    start, units = time.perf_counter(), 0
    while time.perf_counter() - start < WINDOW:
        units += work()
    return units / (time.perf_counter() - start)


torch.set_num_threads(1)
X, W = torch.randn(256, 288), torch.randn(288, 864)
A, B = torch.randn(8 << 20), torch.randn(8 << 20)


def gemms():
    for _ in range(20):
        X @ W
    return 20


def adds():
    torch.add(A, B, out=A)
    return 1


def block_means(values, size):
    """Means of consecutive, non-overlapping blocks of `size` values (a partial last one dropped)."""
    return [statistics.fmean(values[i:i + size]) for i in range(0, len(values) - size + 1, size)]


WORKLOADS = {"GEMM 256x288x864": gemms, "add of 32 MiB vectors": adds}
rates = {name: [] for name in WORKLOADS}
end = time.perf_counter() + SECONDS
while True:  # at least one window of each
    for name, work in WORKLOADS.items():
        rates[name].append(rate(work))
    if time.perf_counter() >= end:
        break

print(f"{SECONDS:.0f} s, windows of {WINDOW:g} s per workload, alternating")
print("| workload | mean rate /s | block of windows | blocks | sd | range |")
print("|---|---|---|---|---|---|")
for name, values in rates.items():
    mean = statistics.fmean(values)
    for size in (1, 5, 15, 30):
        blocks = block_means(values, size)
        if len(blocks) < 2:
            continue
        sd = statistics.pstdev(blocks) / mean
        print(f"| {name} | {mean:.1f} | {size} | {len(blocks)} | {sd:.1%} "
              f"| {min(blocks) / mean:.3f}-{max(blocks) / mean:.3f} |")

print("\n| workload | lag (blocks of 10 windows) | from the block before | from the mean before and after |")
print("|---|---|---|---|")
for name, values in rates.items():
    mean = statistics.fmean(values)
    blocks = block_means(values, 10)
    for k in (1, 2, 3):
        if len(blocks) <= 2 * k:
            continue
        before = [blocks[i + k] - blocks[i] for i in range(len(blocks) - k)]
        both = [blocks[i + k] - (blocks[i] + blocks[i + 2 * k]) / 2
                for i in range(len(blocks) - 2 * k)]
        rms = [statistics.fmean(e * e for e in errors) ** 0.5 / mean for errors in (before, both)]
        print(f"| {name} | {k} | {rms[0]:.1%} | {rms[1]:.1%} |")
