#!/usr/bin/env python3
"""Gloo all-reduces between two processes on this machine, under the kernel's default policy and
under SCHED_BATCH (what dtwin-runtime gives its threads, runtime/cpu_scheduling.hpp): each
process computes (1-thread GEMMs) for COMPUTE_MS, then all-reduces a 295 KB tensor (the
quickstart layer's activation, the size of a tp=2 collective), ROUNDS times. Prints, per policy,
the median, mean and 90th percentile of rank 0's all-reduce in ms, the share over 2 ms, and how
many of those ended within 0.5 ms after a scheduler tick (CONFIG_HZ from the kernel's config).

Usage: .venv/bin/python bench/allreduce_stalls.py [COMPUTE_MS (5)] [ROUNDS (300)] [REPEATS (2)]
"""
import gzip
import multiprocessing
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

COMPUTE_MS = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
ELEMENTS = 256 * 288  # fp32: 294,912 bytes


def kernel_hz():
    """CONFIG_HZ of the running kernel, or None where its configuration is not readable."""
    for path in ("/proc/config.gz", f"/boot/config-{os.uname().release}"):
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith("CONFIG_HZ="):
                        return int(line.split("=")[1])
        except OSError:
            continue
    return None


def rank_main(rank, policy, port, results):
    if policy == "batch":  # before any thread starts, so that all inherit it
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    tensor = torch.randn(ELEMENTS)
    a, w = torch.randn(256, 288), torch.randn(288, 768)
    spans = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        while (time.perf_counter() - start) * 1e3 < COMPUTE_MS:
            a @ w
        begin = time.monotonic_ns()
        dist.all_reduce(tensor)
        spans.append((begin, time.monotonic_ns()))
    dist.destroy_process_group()
    if rank == 0:
        results.put(spans)


def measure(policy, port):
    results = multiprocessing.Queue()
    ranks = [multiprocessing.Process(target=rank_main, args=(r, policy, port, results))
             for r in range(2)]
    for p in ranks:
        p.start()
    spans = results.get()
    for p in ranks:
        p.join()
    return spans


def main():
    hz = kernel_hz()
    print(f"{ROUNDS} all-reduces of {ELEMENTS * 4} bytes, {COMPUTE_MS} ms of compute between, "
          f"2 processes, {os.cpu_count()} cores, CONFIG_HZ {hz}")
    print("| policy | median ms | mean ms | p90 ms | over 2 ms | of those, ending < 0.5 ms after a tick |")
    print("|---|---|---|---|---|---|")
    port = 29650
    for _ in range(REPEATS):
        for policy in ("default", "batch"):
            port += 1
            spans = measure(policy, port)
            ms = sorted((end - begin) / 1e6 for begin, end in spans)
            slow = [end for begin, end in spans if (end - begin) / 1e6 > 2]
            after_tick = ("n/a" if hz is None else
                          f"{sum(1 for end in slow if end % (10**9 // hz) < 500_000)} of {len(slow)}")
            print(f"| {policy} | {statistics.median(ms):.3f} | {statistics.mean(ms):.3f} "
                  f"| {ms[int(len(ms) * 0.9)]:.3f} | {len(slow) / len(ms):.0%} | {after_tick} |",
                  flush=True)


if __name__ == "__main__":
    main()
