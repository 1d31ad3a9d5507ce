#!/usr/bin/env python3
"""Predicted against measured on every CPU scenario: runs `dtwin run` (profile, simulate, train,
compare, plot) on each, then prints a Markdown table of step time (measured: the mean and the
standard deviation over the steps), bubble fraction and peak memory per rank, predicted and
measured, with the errors, the compute kinds' error per step and rank split into time on a core,
time waiting for one and communication inside (compare.json's "cores", CPU runs) and, where a
target is missed (step time within 5%, bubble within 3 points, every rank's peak memory within
10%), the action kinds that explain the gap. Then the two-host cases: dp=2 and pp=2 with one
rank on each of two network namespaces joined by a shaped link (bench/net_hosts.py; needs root),
100 Mbit/s and 1 Gbit/s, each rank a `dtwin run` under torchrun-style variables. Also writes a
microbatch sweep of the quickstart (out/bench/sweep.csv, drawn by plots/sweep.py to
out/bench/sweep.png).

Usage: .venv/bin/python bench/predict_vs_measure.py [path/to/dtwin] [steps]
       python3 bench/predict_vs_measure.py --gpu [path/to/dtwin] [steps]
--gpu runs the single-H100 scenarios instead (h100-single, h100-124m, h100-pp4-shared; the same
targets), without the two-host cases and the sweep.
"""
import csv
import json
import os
import subprocess
import sys

from net_hosts import NetHosts

GPU = "--gpu" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if a != "--gpu"]
DTWIN = ARGS[0] if len(ARGS) > 0 else "build/cli/dtwin"
STEPS = ARGS[1] if len(ARGS) > 1 else "30"
SCENARIOS = (["h100-single", "h100-124m", "h100-pp4-shared"] if GPU else
             ["quickstart", "dp2", "pp3-gpipe", "hybrid-dp2-pp2", "pp2-interleaved", "pp3-zbh1",
              "zero3-dp2", "tp2", "3d-dp2-tp2-pp2", "gqa-tp2", "moe-pp3", "moe-ep2",
              "moe-pp2-ep2", "cp2", "cp2-tp2"])
OUT = "out/bench-gpu" if GPU else "out/bench"


def run(scenario, out, extra=()):
    """`dtwin run` one scenario; returns its compare.json."""
    # On the GPU every run measures its own profile (the acceptance's median of 3 runs, each with
    # its own profile), where the cache would give a warm machine's later runs the first's.
    args = [DTWIN, "run", f"scenarios/{scenario}.yaml", "-o", out,
            "--set", f"training.steps={STEPS}", *(["--reprofile"] if GPU else []), *extra]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "compare.json")) as f:
        return json.load(f)


def row(name, c):
    step, bubble = c["step_time"], c["bubble"]
    # Errors are (predicted - measured) / measured, per rank for the peak memory.
    memory = [m["relative_error"] for m in c["memory"]]
    worst = max(memory, key=abs)
    ok = (abs(step["relative_error"]) <= 0.05 and abs(bubble["difference_pp"]) <= 3
          and abs(worst) <= 0.10)
    gap = "" if ok else ", ".join(c.get("explaining_kinds", []))
    # The compute kinds' error per step and rank: on a core, waiting for one, communication inside.
    cores = c.get("cores")
    split = (f"{cores['cpu_error_s'] * 1e3:+.1f} / {cores['core_wait_error_s'] * 1e3:+.1f} / "
             f"{cores['inner_comm_error_s'] * 1e3:+.1f}" if cores else "")
    return (f"| {name} | {step['predicted_s'] * 1e3:.0f} | {step['measured_s'] * 1e3:.0f} "
            f"± {step['measured_std_s'] * 1e3:.0f} "
            f"| {step['relative_error']:+.1%} | {bubble['predicted_fraction']:.1%} "
            f"| {bubble['measured_fraction']:.1%} | {bubble['difference_pp']:+.1f} "
            f"| {' / '.join(f'{e:+.1%}' for e in memory)} | {split} "
            f"| {'yes' if ok else 'no: ' + gap} |")


print("| scenario | predicted step ms | measured step ms (± sd over steps) | error "
      "| predicted bubble "
      "| measured bubble | difference (points) | memory error per rank "
      "| compute error ms: CPU / wait / inner comm | within target |")
print("|---|---|---|---|---|---|---|---|---|---|")
for scenario in SCENARIOS:
    print(row(scenario, run(scenario, f"{OUT}/{scenario}")), flush=True)
if GPU:
    raise SystemExit(0)

# Two hosts, one rank each: the quickstart's model as dp=2 (dp2.yaml) or as 2 pipeline stages.
TWO_HOSTS = {"dp2": ["dp2"], "pp2": ["quickstart", "--set", "layout.pp=2"]}
for case, (scenario, *sets) in TWO_HOSTS.items():
    for rate in ("100mbit", "1gbit"):
        out = f"{OUT}/two-hosts-{case}-{rate}"
        # The namespaces share this machine: LOCAL_WORLD_SIZE=2 gives each rank half its cores,
        # one thread, and each simulated host has one core to match. Both rates train the same
        # scenario: --reprofile gives each its own profile, made right after its training as
        # every one-host case's is, not one 2-4 minutes older.
        with NetHosts(2, rate) as hosts:
            ranks = []
            for rank in range(2):
                env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK="0",
                           LOCAL_WORLD_SIZE="2", MASTER_ADDR=hosts.address(0),
                           MASTER_PORT="29500")
                args = ["ip", "netns", "exec", hosts.hosts[rank], DTWIN, "run",
                        f"scenarios/{scenario}.yaml", *sets, "--set", f"training.steps={STEPS}",
                        "--set", "cluster.nodes=2", "--set", "cluster.ranks_per_device=1",
                        "--set", "cluster.device.cores=1", "--reprofile",
                        "-o", out if rank == 0 else f"{out}/rank1"]
                ranks.append(subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL))
            if any(r.wait() != 0 for r in ranks):
                raise SystemExit(f"two-host {case} at {rate} failed")
        with open(os.path.join(out, "compare.json")) as f:
            print(row(f"two hosts, {case}, {rate}", json.load(f)), flush=True)

sweep = os.path.join(OUT, "sweep.csv")
with open(sweep, "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["scenario", "pp", "microbatches", "predicted_step_s", "measured_step_s",
                     "predicted_bubble", "measured_bubble"])
    for m in (2, 4, 8):
        c = run("quickstart", f"{OUT}/sweep-m{m}", ["--set", f"layout.microbatches={m}"])
        writer.writerow(["quickstart 1F1B pp=3", 3, m, c["step_time"]["predicted_s"],
                         c["step_time"]["measured_s"], c["bubble"]["predicted_fraction"],
                         c["bubble"]["measured_fraction"]])
subprocess.run([sys.executable, "plots/sweep.py", sweep], check=True)
print(f"\nsweep: {sweep} and {OUT}/sweep.png")
