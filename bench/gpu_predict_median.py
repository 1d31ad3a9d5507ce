#!/usr/bin/env python3
"""Issue 58's prediction acceptance from `bench/gpu_acceptance.sh predict`'s runs: per scenario,
each run's step-time error of `dtwin run` (the profile-driven simulation against the measured
step) and, where the run kept one, of the analytic simulation with the device description its
profile fitted, then their medians (acceptance: within 5% as the median of 3 runs, each with
its own profile). Errors are predicted / measured - 1.

Usage: python3 bench/gpu_predict_median.py DIR RUNS
  DIR holds compare-SCENARIO-RUN.json (dtwin run's compare.json) and, for the analytic model,
  analytic-SCENARIO-RUN/predicted.summary.json, RUN = 1..RUNS; the scenarios are those of the
  compare files, a run without one shown as —.
"""
import json
import os
import re
import statistics
import sys


def load(path):
    """The JSON at `path`, or None when the run left no such file."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def cell(errors):
    """'e1, e2, e3 (median m)' over the runs that have a figure ('median of k' when only k of
    them have); '—' when none has."""
    figures = [e for e in errors if e is not None]
    if not figures:
        return "—"
    runs = ", ".join("—" if e is None else f"{e:+.1%}" for e in errors)
    of = "" if len(figures) == len(errors) else f" of {len(figures)}:"
    return f"{runs} (median{of} {statistics.median(figures):+.1%})"


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    folder, runs = argv[0], int(argv[1])
    print("| scenario | dtwin run: error per run (median) | analytic, fitted description: error "
          "per run (median) |")
    print("|---|---|---|")
    names = (re.fullmatch(r"compare-(.+)-\d+\.json", f) for f in os.listdir(folder))
    for scenario in sorted({m.group(1) for m in names if m}):
        profiled, analytic = [], []
        for run in range(1, runs + 1):
            compare = load(os.path.join(folder, f"compare-{scenario}-{run}.json"))
            measured = compare["step_time"]["measured_s"] if compare else None
            profiled.append(compare["step_time"]["relative_error"] if compare else None)
            summary = load(os.path.join(folder, f"analytic-{scenario}-{run}",
                                        "predicted.summary.json"))
            analytic.append(summary["step_time_s"] / measured - 1
                            if summary and measured else None)
        print(f"| {scenario} | {cell(profiled)} | {cell(analytic)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
