#!/usr/bin/env python3
"""The planner against published layouts: for each scenario of validation/ (one published run
each), runs `dtwin plan` on its GPU count and global batch with its recompute, ZeRO,
sequence-parallel and precision settings kept (the papers did not search those), simulates the
best 5, and reports where the published layout ranks among all candidates by the closed-form estimate,
whether it is among the 5 simulated, and the planner's best simulated step against the
published layout's simulated step. Prints a Markdown table (README, "Planning a layout").

Usage: python3 bench/plan_validation.py [path/to/dtwin [scenario.yaml ...]]
"""
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

DTWIN = sys.argv[1] if len(sys.argv) > 1 else "build/cli/dtwin"
KEYS = ("tp", "pp", "dp", "micro_batch_size", "microbatches", "schedule", "virtual_stages")


def published_layout(path):
    """The layout keys of the scenario as dtwin loads it (`dtwin keys --resolved`), as plan.csv
    writes them."""
    resolved = json.loads(subprocess.run([DTWIN, "keys", "--resolved", path], check=True,
                                         capture_output=True, text=True).stdout)
    return {key: str(resolved["layout"][key]) for key in KEYS}


def simulated_step(path):
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([DTWIN, "simulate", path, "--allow-oom", "-o", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "predicted.summary.json")) as f:
            return json.load(f)["step_time_s"]


print("| published run | GPUs | published layout | its estimate rank | in simulated top 5 | "
      "published simulated s | planner's best | best simulated s | plan wall s |")
print("|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[2:] or sorted(glob.glob("validation/*.yaml")):
    published = published_layout(path)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([DTWIN, "plan", path, "--top", "5", "--keep", "recompute", "--keep", "zero",
                        "--keep", "sequence_parallel", "--keep", "precision", "-o", out],
                       check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        with open(os.path.join(out, "plan.csv")) as f:
            rows = list(csv.DictReader(f))
    rank = next((i + 1 for i, r in enumerate(rows)
                 if all(r[k] == published[k] for k in KEYS)), None)
    simulated = [r for r in rows if r["simulated_step_s"]]
    best = min(simulated, key=lambda r: float(r["simulated_step_s"]))
    in_top = rank is not None and rank <= 5
    gpus = int(published["tp"]) * int(published["pp"]) * int(published["dp"])
    describe = lambda r: (f"tp {r['tp']} pp {r['pp']} dp {r['dp']} mbs {r['micro_batch_size']} "
                          f"{r['schedule']}" + (f" v{r['virtual_stages']}"
                                                if r["schedule"] == "interleaved-1f1b" else ""))
    print(f"| {os.path.basename(path)[:-5]} | {gpus} | {describe(published)} | "
          f"{rank if rank else 'not kept'} of {len(rows)} | {'yes' if in_top else 'no'} | "
          f"{simulated_step(path):.2f} | {describe(best)} | "
          f"{float(best['simulated_step_s']):.2f} | {wall:.0f} |", flush=True)
