#!/usr/bin/python3
"""Bubble fraction and step time against the number of microbatches, predicted against
measured.

Usage:
    /usr/bin/python3 plots/sweep.py CSV [-o PNG]

CSV columns: microbatches, predicted_step_s, measured_step_s, predicted_bubble,
measured_bubble (fractions), and optionally scenario (one series per value) and pp (adds the
analytic (pp-1)/(m+pp-1) bubble of GPipe and 1F1B). bench/predict_vs_measure.py writes one.
Saves next to the CSV as sweep.png (or -o PNG). Exit status 2, naming the file, when the CSV
is missing or malformed.
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_io  # noqa: E402

REQUIRED = ["microbatches", "predicted_step_s", "measured_step_s", "predicted_bubble",
            "measured_bubble"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", metavar="CSV")
    parser.add_argument("-o", "--output", default=None)
    args = parser.parse_args()
    columns = trace_io.read_csv(args.csv, REQUIRED, optional=["scenario", "pp"])
    values = {c: trace_io.parse_floats(args.csv, c, columns[c]) for c in REQUIRED}
    names = columns.get("scenario", ["run"] * len(values["microbatches"]))
    pp = trace_io.parse_floats(args.csv, "pp", columns["pp"]) if "pp" in columns else None

    plt = trace_io.import_pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, name in enumerate(dict.fromkeys(names)):
        rows = sorted(j for j, n in enumerate(names) if n == name)
        rows.sort(key=lambda j: values["microbatches"][j])
        m = [values["microbatches"][j] for j in rows]
        colour = colours[i % len(colours)]
        for ax, key, scale in ((left, "bubble", 100), (right, "step_s", 1e3)):
            ax.plot(m, [values[f"measured_{key}"][j] * scale for j in rows], "o-", color=colour,
                    label=f"{name} measured")
            ax.plot(m, [values[f"predicted_{key}"][j] * scale for j in rows], "s--", color=colour,
                    label=f"{name} predicted")
        if pp:
            p = pp[rows[0]]
            left.plot(m, [100 * (p - 1) / (x + p - 1) for x in m], ":", color="#888888",
                      label=f"(pp-1)/(m+pp-1), pp={int(p)}")
    left.set_ylabel("bubble fraction (%)")
    right.set_ylabel("step time (ms)")
    for ax in (left, right):
        ax.set_xlabel("microbatches per step")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize=8)
    fig.suptitle("predicted (dashed) against measured (solid)")
    fig.tight_layout()
    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "sweep.png")
    trace_io.save_figure(fig, out)
    return 0


if __name__ == "__main__":
    trace_io.run_main(main)
