#!/usr/bin/env python3
"""Tokens per expert of a mixture-of-experts `dtwin train` run.

Usage:
    .venv/bin/python plots/experts.py OUT [-o PNG] [-v]

Reads OUT/tokens_per_expert.csv (columns step, layer, expert, tokens, load: the token copies each
expert of each MoE layer computed in a step over the whole global batch, and those routed to it
before a capacity dropped any) and draws two panels on one step axis:

- top: each expert's share of its layer's computed copies, averaged over the layers (a balanced
  router keeps every expert at 1/E, dashed);
- bottom: the load imbalance per step, the busiest expert's routed copies over the mean, the
  largest over the layers and their mean over the layers.

The title gives the imbalance over the run (mean of the per-step figures after step 1). Saves
OUT/experts.png (or -o PNG) at 120 dpi, silently unless -v. Exit status 2, with one line naming
the file, when tokens_per_expert.csv is missing or malformed.
"""

import argparse
import collections
import math
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_io  # noqa: E402


def load_counts(path):
    """{step: {layer: {expert: (tokens, load)}}} from tokens_per_expert.csv."""
    columns = trace_io.read_csv(path, ["step", "layer", "expert", "tokens", "load"])
    values = {name: trace_io.parse_floats(path, name, columns[name]) for name in columns}
    counts = collections.defaultdict(lambda: collections.defaultdict(dict))
    for step, layer, expert, tokens, load in zip(*(values[n] for n in
                                                   ("step", "layer", "expert", "tokens", "load"))):
        if not all(math.isfinite(v) and v >= 0 for v in (step, layer, expert, tokens, load)):
            raise trace_io.InputError(f"{path}: every value must be a finite number >= 0")
        counts[int(step)][int(layer)][int(expert)] = (tokens, load)
    if not counts:
        raise trace_io.InputError(f"{path}: no rows")
    return counts


def imbalance(loads):
    """The busiest expert's load over the mean load (1 when balanced or empty)."""
    mean = sum(loads) / len(loads)
    return max(loads) / mean if mean > 0 else 1.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", metavar="OUT", help="dtwin output folder with tokens_per_expert.csv")
    parser.add_argument("-o", "--output", default=None, help="PNG path (default OUT/experts.png)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the output path")
    args = parser.parse_args()

    path = os.path.join(args.out, "tokens_per_expert.csv")
    counts = load_counts(path)
    steps = sorted(counts)
    experts = sorted({e for s in steps for layer in counts[s].values() for e in layer})
    shares = {e: [] for e in experts}
    worst, mean_imbalance = [], []
    for s in steps:
        layers = counts[s].values()
        for e in experts:
            per_layer = [layer[e][0] / total for layer in layers
                         if (total := sum(t for t, _ in layer.values())) > 0 and e in layer]
            shares[e].append(sum(per_layer) / len(per_layer) if per_layer else float("nan"))
        figures = [imbalance([load for _, load in layer.values()]) for layer in layers]
        worst.append(max(figures))
        mean_imbalance.append(sum(figures) / len(figures))

    plt = trace_io.import_pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6),
                                      gridspec_kw={"height_ratios": [3, 1.5]})
    for e in experts:
        top.plot(steps, shares[e], linewidth=1.2, label=f"expert {e}")
    top.axhline(1 / len(experts), color="#888888", linestyle="--",
                label=f"balanced: 1/{len(experts)}")
    top.set_ylabel("share of a layer's copies")
    top.legend(frameon=False, fontsize=8, ncol=min(4, len(experts) + 1), loc="upper right")
    top.grid(alpha=0.3)
    kept = mean_imbalance[1:] or mean_imbalance
    name = os.path.basename(os.path.normpath(os.path.abspath(args.out)))
    top.set_title(f"{name}: {len(experts)} experts, {len(counts[steps[0]])} MoE layers, "
                  f"load imbalance (busiest / mean) {sum(kept) / len(kept):.3f} on average",
                  fontsize=11)
    bottom.plot(steps, worst, color="#e15759", linewidth=1.2, label="busiest layer")
    bottom.plot(steps, mean_imbalance, color="#4e79a7", linewidth=1.2, label="mean over layers")
    bottom.axhline(1, color="#888888", linestyle="--", linewidth=1)
    bottom.set_ylabel("busiest / mean")
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    bottom.legend(frameon=False, fontsize=8, loc="best")
    fig.tight_layout()
    output = args.output or os.path.join(args.out, "experts.png")
    trace_io.save_figure(fig, output, verbose=args.verbose)
    return 0


if __name__ == "__main__":
    trace_io.run_main(main)
