#!/usr/bin/env python3
"""Bubble fraction and step time against the number of microbatches, predicted against
measured.

Usage:
    .venv/bin/python plots/sweep.py CSV [-o PNG] [-v]

CSV format: a header row, then one row per microbatch count (and per series):

    scenario,pp,microbatches,predicted_step_s,measured_step_s,predicted_bubble,measured_bubble
    quickstart 1F1B pp=3,3,2,0.2558,0.2594,0.5287,0.5165
    quickstart 1F1B pp=3,3,4,0.4354,0.4668,0.3984,0.3609

- required: microbatches (a positive number), predicted_step_s and measured_step_s (seconds),
  predicted_bubble and measured_bubble (fractions, 0..1). A predicted or measured cell may be
  left empty; that point is left out.
- optional: scenario (one series per distinct value, in order of first appearance; without it
  all rows are one series) and pp (pipeline depth; adds the analytic GPipe/1F1B bubble
  (pp-1)/(m+pp-1) as a dotted grey curve, once per distinct pp). Column order is free.
bench/predict_vs_measure.py writes such a file (out/bench/sweep.csv).

Draws two panels, bubble fraction (%) and step time (ms) against microbatches, each series in
its own colour, predicted dashed with squares, measured solid with circles. Saves sweep.png
next to the CSV (or -o PNG) at 120 dpi, silently unless -v. Exit status 2, with one line naming
the file (and line), when the CSV is missing or malformed.
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_io  # noqa: E402

REQUIRED = ["microbatches", "predicted_step_s", "measured_step_s", "predicted_bubble",
            "measured_bubble"]


def analytic_bubble(pp, m):
    return (pp - 1) / (m + pp - 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", metavar="CSV", help="sweep CSV (format in the module docstring)")
    parser.add_argument("-o", "--output", default=None, help="PNG path (default sweep.png next to CSV)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the output path")
    args = parser.parse_args()

    path = args.csv
    columns = trace_io.read_csv(path, REQUIRED, optional=["scenario", "pp"])
    values = {c: trace_io.parse_floats(path, c, columns[c], allow_empty=(c != "microbatches"))
              for c in REQUIRED}
    rows = range(len(values["microbatches"]))
    for j in rows:
        if not values["microbatches"][j] > 0 or math.isinf(values["microbatches"][j]):
            raise trace_io.InputError(f"{path}:{j + 2}: microbatches must be positive, "
                                      f"got {columns['microbatches'][j]!r}")
    names = columns.get("scenario", ["run"] * len(rows))
    pp = None
    if "pp" in columns:
        pp = trace_io.parse_floats(path, "pp", columns["pp"], allow_empty=True)
        for j, p in enumerate(pp):
            if not math.isnan(p) and not (p >= 1 and math.isfinite(p)):
                raise trace_io.InputError(f"{path}:{j + 2}: pp must be at least 1, got {columns['pp'][j]!r}")

    plt = trace_io.import_pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    series = list(dict.fromkeys(names))
    for i, name in enumerate(series):
        mine = sorted((j for j in rows if names[j] == name), key=lambda j: values["microbatches"][j])
        colour = colours[i % len(colours)]
        label = name if len(series) > 1 or "scenario" in columns else ""
        for ax, key, scale in ((left, "bubble", 100), (right, "step_s", 1e3)):
            for side, style, marker in (("measured", "-", "o"), ("predicted", "--", "s")):
                points = [(values["microbatches"][j], values[f"{side}_{key}"][j] * scale)
                          for j in mine if math.isfinite(values[f"{side}_{key}"][j])]
                if points:
                    ax.plot(*zip(*points), linestyle=style, marker=marker, color=colour,
                            label=f"{label} {side}".strip())

    ms = sorted(set(values["microbatches"]))
    if pp:
        for p in sorted({p for p in pp if not math.isnan(p)}):
            lo, hi = min(ms), max(ms)
            grid = [lo + (hi - lo) * k / 200 for k in range(201)] if hi > lo else [lo]
            left.plot(grid, [100 * analytic_bubble(p, m) for m in grid], ":", color="#777777",
                      linewidth=1.5, label=f"analytic (pp-1)/(m+pp-1), pp={p:g}")
            left.annotate(f"pp={p:g}", (hi, 100 * analytic_bubble(p, hi)), xytext=(3, 0),
                          textcoords="offset points", fontsize=7, color="#555555", va="center")

    left.set_ylabel("bubble fraction (%)")
    left.set_title("bubble fraction", fontsize=11)
    right.set_ylabel("step time (ms)")
    right.set_title("step time", fontsize=11)
    for ax in (left, right):
        ax.set_xlabel("microbatches per step (m)")
        if len(ms) <= 12:
            ax.set_xticks(ms)
            ax.set_xticklabels([f"{m:g}" for m in ms])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize=8, loc="best")
    fig.suptitle(f"{os.path.basename(path)}: predicted (dashed) against measured (solid)", fontsize=12)
    fig.tight_layout()
    output = args.output or os.path.join(os.path.dirname(os.path.abspath(path)), "sweep.png")
    trace_io.save_figure(fig, output, verbose=args.verbose)
    return 0


if __name__ == "__main__":
    trace_io.run_main(main)
