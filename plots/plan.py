#!/usr/bin/env python3
"""Throughput against memory of the layouts `dtwin plan` estimated, with their Pareto front.

Usage:
    .venv/bin/python plots/plan.py OUT [-o PNG] [-v]

Reads OUT/plan.csv (one line per layout that fits, and the scenario's own layout; dtwin plan's
columns) and draws each layout at (estimated peak memory GiB, tokens/s): every layout by its
closed-form estimate in grey, the simulated ones by their simulation in colour (by schedule), the
scenario's own layout (is_input 1) as a labelled star at its estimate, the memory a rank's tensors
may use (memory_limit_gib) as a vertical line, and the Pareto front of every estimated layout
that fits (no other is both faster and smaller) as a line, its first layouts labelled tp/pp/dp.
Saves OUT/plan.png (or -o PNG) at 120 dpi, silently unless -v. Exit status 2, with one line
naming the file, when plan.csv is missing or malformed.
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_io  # noqa: E402

COLUMNS = ["tp", "pp", "dp", "schedule", "estimated_tokens_per_s", "estimated_peak_gib",
           "simulated_tokens_per_s", "simulated_peak_gib", "is_input", "memory_limit_gib"]
FRONT_LABELS = 12  # layouts of the front labelled, smallest memory first


def pareto_front(points):
    """The points (memory, throughput, ...) that no other point beats on both, by memory."""
    front, best = [], -math.inf
    for p in sorted(points, key=lambda p: (p[0], -p[1])):
        if p[1] > best:
            front.append(p)
            best = p[1]
    return front


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", metavar="OUT", help="dtwin plan output folder with plan.csv")
    parser.add_argument("-o", "--output", default=None, help="PNG path (default OUT/plan.png)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the output path")
    args = parser.parse_args()

    path = os.path.join(args.out, "plan.csv")
    c = trace_io.read_csv(path, COLUMNS)
    names = [f"{tp}/{pp}/{dp}" for tp, pp, dp in zip(c["tp"], c["pp"], c["dp"])]
    estimated = list(zip(trace_io.parse_floats(path, "estimated_peak_gib", c["estimated_peak_gib"]),
                         trace_io.parse_floats(path, "estimated_tokens_per_s",
                                               c["estimated_tokens_per_s"]), names))
    sim_memory = trace_io.parse_floats(path, "simulated_peak_gib", c["simulated_peak_gib"],
                                       allow_empty=True)
    sim_tokens = trace_io.parse_floats(path, "simulated_tokens_per_s",
                                       c["simulated_tokens_per_s"], allow_empty=True)
    simulated = [(m, t, c["schedule"][i]) for i, (m, t) in enumerate(zip(sim_memory, sim_tokens))
                 if math.isfinite(m) and math.isfinite(t)]
    limit = max(trace_io.parse_floats(path, "memory_limit_gib", c["memory_limit_gib"]))
    is_input = [flag == "1" for flag in c["is_input"]]

    plt = trace_io.import_pyplot()
    fig, ax = plt.subplots(figsize=(9, 5.5))
    ax.scatter([p[0] for p in estimated], [p[1] for p in estimated], s=8, color="#bbbbbb",
               label=f"estimated ({len(estimated)} layouts)")
    colours = {"gpipe": "#4e79a7", "1f1b": "#59a14f", "zb-h1": "#e15759", "zb-1p": "#b07aa1",
               "zb-2p": "#9c755f", "zb-v": "#76b7b2", "interleaved-1f1b": "#f28e2b"}
    for schedule in sorted({p[2] for p in simulated}):
        points = [p for p in simulated if p[2] == schedule]
        ax.scatter([p[0] for p in points], [p[1] for p in points], s=36,
                   color=colours.get(schedule, "#edc948"), edgecolor="black", linewidth=0.5,
                   label=f"simulated, {schedule}")
    front = pareto_front([p for p in estimated if p[0] <= limit])
    ax.step([p[0] for p in front], [p[1] for p in front], where="post", color="black",
            linewidth=1, label=f"Pareto front (estimated, {len(front)} layouts)")
    for m, t, name in front[:FRONT_LABELS]:
        ax.annotate(name, (m, t), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.axvline(limit, color="#d62728", linestyle="--", linewidth=1,
               label=f"memory limit ({limit:.3g} GiB for tensors)")
    for (m, t, name), own in zip(estimated, is_input):
        if own:
            ax.scatter([m], [t], s=160, marker="*", color="gold", edgecolor="black", zorder=5,
                       label="your layout (estimated)")
            ax.annotate(f"your layout {name}", (m, t), textcoords="offset points",
                        xytext=(6, -12), fontsize=8, fontweight="bold")
    ax.set_xlabel("peak memory per GPU (GiB)")
    ax.set_ylabel("tokens/s")
    ax.set_title(f"{os.path.basename(os.path.normpath(os.path.abspath(args.out)))}: layouts by "
                 "throughput and memory (labels tp/pp/dp)", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8, loc="best")
    fig.tight_layout()
    trace_io.save_figure(fig, args.output or os.path.join(args.out, "plan.png"),
                         verbose=args.verbose)
    return 0


if __name__ == "__main__":
    trace_io.run_main(main)
