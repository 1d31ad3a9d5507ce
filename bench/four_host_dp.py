#!/usr/bin/env python3
"""The course labs' data-parallel report on four hosts: scenarios/bert-kjv-dp4-4host.yaml (a
small BERT fine-tuned on kjv-books, dp 4, one rank per host) trained under each dp_sync —
gather-scatter (gradients gathered on rank 0, averaged, scattered), allreduce (Gloo's ring), and
buckets (allreduce with layout.overlap_grad_reduce, DDP's bucketed overlap) — on four network
namespaces joined by shaped links (bench/net_hosts.py; needs root). Per variant: the mean time
per iteration over the steps but the first (loss.csv), the loss of the first five minibatches,
and the data-parallel bytes per step, predicted (`dtwin simulate`), counted at the communicator
and read on each host's interface (measured.summary.json; `dtwin compare` prints all three).
Then the traffic per epoch at global batch 64, 32 and 16 (allreduce): each run trains one whole
epoch of kjv-books' 27,992 verses, and the hosts' interface counters over the run (read from
/proc/net/dev around it, rendezvous and end included) stand against `iterations x bytes per
iteration`.

Then, with --runs N, `dtwin run` (profile, simulate, train, compare) of the allreduce variant N
times on the four hosts: the step-time error of each run and their median.

Usage: .venv/bin/python bench/four_host_dp.py [--rate 1gbit] [--steps 40] [--epochs] [--runs 3]
       [--no-variants]
Writes its Markdown to stdout; bench/results/four_host_dp.md keeps the latest.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from net_hosts import NetHosts  # noqa: E402

DTWIN = "build/cli/dtwin"
SCENARIO = "scenarios/bert-kjv-dp4-4host.yaml"
TRAIN_VERSES = 27992  # kjv-books' training split (scripts/make_kjv_classification.py)
HOSTS = 4
RATE = "1gbit"  # the links' rate (--rate)
VARIANTS = {
    "gather-scatter": ["layout.dp_sync=gather-scatter"],
    "allreduce": ["layout.dp_sync=allreduce"],
    "buckets": ["layout.dp_sync=allreduce", "layout.overlap_grad_reduce=true"],
}


def sets(pairs):
    return [a for p in pairs for a in ("--set", p)]


def interface_counters(netns):
    """eth0's (received bytes, received packets, sent bytes, sent packets) in `netns`."""
    text = subprocess.run(["ip", "netns", "exec", netns, "cat", "/proc/net/dev"], check=True,
                          capture_output=True, text=True).stdout
    for line in text.splitlines():
        name, _, fields = line.partition(":")
        if name.strip() == "eth0":
            f = [int(x) for x in fields.split()]
            return f[0], f[1], f[8], f[9]
    raise RuntimeError(f"{netns}: no eth0 in /proc/net/dev")


def train_on_hosts(hosts, out, overrides, command="train"):
    """`dtwin train` (or `command`) with one rank on each host; returns rank 0's folder and the
    hosts' interface traffic over the run (bytes sent and received, summed over the hosts)."""
    before = [interface_counters(h) for h in hosts.hosts]
    procs = []
    for rank, netns in enumerate(hosts.hosts):
        folder = f"{out}-{rank}"
        shutil.rmtree(folder, ignore_errors=True)
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(HOSTS), LOCAL_RANK="0",
                   LOCAL_WORLD_SIZE=str(HOSTS), MASTER_ADDR=NetHosts.address(0),
                   MASTER_PORT="29500")
        cmd = ["ip", "netns", "exec", netns, DTWIN, command, SCENARIO, *sets(overrides),
               "--data-dir=data", "-o", folder]
        log = open(f"{folder}.log", "w")
        procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    for rank, (proc, log) in enumerate(procs):
        if proc.wait(timeout=3600) != 0:
            raise RuntimeError(f"rank {rank} failed: see {out}-{rank}.log")
        log.close()
    after = [interface_counters(h) for h in hosts.hosts]
    sent = sum(a[2] - b[2] for a, b in zip(after, before))
    received = sum(a[0] - b[0] for a, b in zip(after, before))
    return f"{out}-0", sent, received


def link_bandwidth(rate):
    """tc's "100mbit" as the scenario's bandwidth, "12.5MB/s"."""
    number, unit = re.fullmatch(r"([0-9.]+)([kmg]bit)", rate).groups()
    bits = float(number) * {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[unit]
    return f"{bits / 8 / 1e6:g}MB/s"


def simulate(out, overrides):
    """`dtwin simulate` with the scenario's inter-node links at the shaped rate."""
    overrides = overrides + [f"cluster.inter_node.bandwidth={link_bandwidth(RATE)}"]
    subprocess.run([DTWIN, "simulate", SCENARIO, *sets(overrides), "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    with open(f"{out}/predicted.summary.json") as f:
        return json.load(f)


def losses_and_seconds(folder):
    with open(f"{folder}/loss.csv") as f:
        rows = list(csv.DictReader(f))
    return [float(r["loss"]) for r in rows], [float(r["seconds"]) for r in rows]


def summary(folder, name):
    with open(f"{folder}/{name}") as f:
        return json.load(f)


def dp_bytes(s, key):
    return sum(r.get(key, 0) for r in s["ranks"])


def variant_rows(hosts, steps, work):
    print(f"## The three data-parallel variants ({steps} iterations, the first dropped)\n")
    print("| dp_sync | s / iteration (mean ± sd) | simulated, no profile | first five losses | "
          "DP bytes sent / step: predicted | counted | interface (frames) |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for name, overrides in VARIANTS.items():
        overrides = overrides + [f"training.steps={steps}"]
        predicted = simulate(f"{work}/sim-{name}", overrides)
        folder, _, _ = train_on_hosts(hosts, f"{work}/{name}", overrides)
        # The predicted summary beside the measured one, for `dtwin compare` (all three figures).
        for f in ("predicted.summary.json", "predicted.trace.json"):
            shutil.copy(f"{work}/sim-{name}/{f}", folder)
        subprocess.run([DTWIN, "compare", folder], check=True, stdout=subprocess.DEVNULL)
        losses, seconds = losses_and_seconds(folder)
        kept = seconds[1:]
        mean = sum(kept) / len(kept)
        sd = math.sqrt(sum((s - mean) ** 2 for s in kept) / len(kept))
        measured = summary(folder, "measured.summary.json")
        print(f"| {name} | {mean:.4f} ± {sd:.4f} | {predicted['step_time_s']:.4f} | "
              + ", ".join(f"{x:.4f}" for x in losses[:5])
              + f" | {dp_bytes(predicted, 'dp_sent_bytes'):.0f} | "
              f"{dp_bytes(measured, 'dp_sent_bytes'):.0f} | "
              f"{dp_bytes(measured, 'interface_sent_bytes'):.0f} "
              f"({dp_bytes(measured, 'interface_sent_packets'):.0f}) |")
    print("\nSimulated without a profile, each node computes on 2 cores of its own; the four "
          "namespaces share this machine's 2 (`dtwin run` below profiles that). Bytes: summed over "
          "the four ranks; the interface's per step is the mean over the kept steps of each "
          "host's eth0 counters.\n")


def epoch_rows(hosts, work):
    print("## Traffic per epoch against the batch size (allreduce, one epoch each)\n")
    print("| global batch | iterations / epoch | DP bytes / iteration (4 ranks) | "
          "iterations x bytes | interface over the run, sent | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for batch in (64, 32, 16):
        iterations = math.ceil(TRAIN_VERSES / batch)
        overrides = ["layout.dp_sync=allreduce", f"layout.micro_batch_size={batch // HOSTS}",
                     f"training.steps={iterations}", "training.warmup_steps=0"]
        predicted = simulate(f"{work}/sim-epoch-{batch}", overrides)
        per_iteration = dp_bytes(predicted, "dp_sent_bytes")
        _, sent, _ = train_on_hosts(hosts, f"{work}/epoch-{batch}", overrides)
        expected = iterations * per_iteration
        print(f"| {batch} | {iterations} | {per_iteration:.0f} | {expected:.0f} | {sent:.0f} | "
              f"{sent / expected:.4f} |")
    print("\nThe bytes per iteration are the gradients' and do not depend on the batch; an epoch's "
          "iterations are 27,992 / batch, so the traffic per epoch grows as the batch shrinks.\n")


def run_rows(hosts, runs, steps, work):
    print(f"## `dtwin run` on the four hosts (allreduce, {steps} steps, {runs} runs)\n")
    print("| run | predicted s / step | measured s / step (sd) | error | bubble error |")
    print("|---:|---:|---:|---:|---:|")
    errors = []
    for run in range(1, runs + 1):
        folder, _, _ = train_on_hosts(hosts, f"{work}/run{run}", [f"training.steps={steps}"],
                                      command="run")
        c = summary(folder, "compare.json")
        step = c["step_time"]
        errors.append(step["relative_error"])
        print(f"| {run} | {step['predicted_s']:.4f} | {step['measured_s']:.4f} "
              f"({step['measured_std_s']:.4f}) | {step['relative_error']:+.1%} | "
              f"{c['bubble']['difference_pp']:+.1f} pp |")
    print(f"\nMedian step-time error: {sorted(errors)[len(errors) // 2]:+.1%}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="1gbit")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--epochs", action="store_true", help="also the per-epoch table")
    parser.add_argument("--runs", type=int, default=0, help="`dtwin run` this many times")
    parser.add_argument("--no-variants", action="store_true", help="skip the variants' table")
    parser.add_argument("--work", default="out/bench/four-host")
    args = parser.parse_args()
    global RATE
    RATE = args.rate
    os.makedirs(args.work, exist_ok=True)
    print(f"# Four hosts, {args.rate} links: {SCENARIO}\n")
    with NetHosts(HOSTS, args.rate) as hosts:
        if not args.no_variants:
            variant_rows(hosts, args.steps, args.work)
        if args.epochs:
            epoch_rows(hosts, args.work)
        if args.runs:
            run_rows(hosts, args.runs, args.steps, args.work)


if __name__ == "__main__":
    main()
