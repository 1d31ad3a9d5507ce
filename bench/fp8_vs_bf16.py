#!/usr/bin/env python3
"""Issue 58's fp8 acceptance on one GPU: `dtwin train` of a scenario (default
scenarios/h100-1b.yaml, a 1.1B-parameter LLaMA) in bf16 and in fp8 (training.precision fp8, its
fp8_recipe), the same seed and batches, STEPS steps each. Prints a Markdown table: the largest
relative loss difference over the steps (acceptance: within 1%), the median step seconds after
WARMUP steps and their ratio (acceptance: fp8 at least 1.3x faster), with the losses of both.

Usage: python3 bench/fp8_vs_bf16.py DTWIN [STEPS] [--scenario PATH] [--set KEY=VALUE ...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

WARMUP = 5


def train(dtwin, scenario, steps, sets):
    """(losses, step seconds) of one `dtwin train` run, from its loss.csv."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [dtwin, "train", scenario, "-o", out, "--set", f"training.steps={steps}"]
        for assignment in sets:
            cmd += ["--set", assignment]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "loss.csv")) as f:
            rows = [line.split(",") for line in f.read().splitlines()]
    col = {name: i for i, name in enumerate(rows[0])}
    losses = [float(r[col["loss"]]) for r in rows[1:]]
    seconds = [float(r[col["seconds"]]) for r in rows[1:]]
    return losses, seconds


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dtwin")
    p.add_argument("steps", nargs="?", type=int, default=50)
    p.add_argument("--scenario", default="scenarios/h100-1b.yaml")
    p.add_argument("--set", action="append", default=[])
    args = p.parse_args(argv)
    if args.steps <= WARMUP:
        p.error(f"steps must exceed the {WARMUP} warm-up steps")
    bf16, bf16_s = train(args.dtwin, args.scenario, args.steps,
                         args.set + ["training.precision=bf16"])
    fp8, fp8_s = train(args.dtwin, args.scenario, args.steps,
                       args.set + ["training.precision=fp8"])
    worst = max(abs(a - b) / b for a, b in zip(fp8, bf16))
    t_bf16 = statistics.median(bf16_s[WARMUP:])
    t_fp8 = statistics.median(fp8_s[WARMUP:])
    print(f"{args.scenario}, {args.steps} steps{''.join(' --set ' + s for s in args.set)}\n")
    print("| | bf16 | fp8 |\n|---|---|---|")
    print(f"| median step (s, after {WARMUP}) | {t_bf16:.4f} | {t_fp8:.4f} |")
    print(f"| first / last loss | {bf16[0]:.4f} / {bf16[-1]:.4f} | {fp8[0]:.4f} / {fp8[-1]:.4f} |")
    print(f"\nfp8 speed-up {t_bf16 / t_fp8:.3f}x (target >= 1.3); largest relative loss "
          f"difference {100 * worst:.3f}% (target <= 1%)")
    print("\nstep,bf16,fp8")
    for i, (a, b) in enumerate(zip(bf16, fp8)):
        print(f"{i},{a:.5f},{b:.5f}")
    return 0 if worst <= 0.01 and t_bf16 / t_fp8 >= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
