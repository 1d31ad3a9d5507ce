#!/usr/bin/python3
"""Loss curve of a `dtwin train` run.

Usage:
    /usr/bin/python3 plots/loss.py OUT [--vocab V] [-o PNG]

Reads OUT/loss.csv (columns step, loss, tokens_per_s, seconds) and draws two panels: the loss
against the step, with ln(V) dashed (the loss of a uniform guess; V = 4096 by default), and
the throughput in tokens/s. Saves OUT/loss.png (or -o PNG). Exit status 2, with one line naming
the file, when loss.csv is missing or malformed.
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_io  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", metavar="OUT", help="dtwin output folder with loss.csv")
    parser.add_argument("--vocab", type=int, default=4096, help="vocabulary size (for ln V)")
    parser.add_argument("-o", "--output", default=None, help="PNG path (default OUT/loss.png)")
    args = parser.parse_args()
    path = os.path.join(args.out, "loss.csv")
    columns = trace_io.read_csv(path, ["step", "loss", "tokens_per_s"])
    steps = trace_io.parse_floats(path, "step", columns["step"])
    loss = trace_io.parse_floats(path, "loss", columns["loss"])
    tokens = trace_io.parse_floats(path, "tokens_per_s", columns["tokens_per_s"])

    plt = trace_io.import_pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6),
                                      gridspec_kw={"height_ratios": [3, 1.3]})
    top.plot(steps, loss, color="#4e79a7", label="training loss")
    top.axhline(math.log(args.vocab), color="#888888", linestyle="--",
                label=f"ln {args.vocab} = {math.log(args.vocab):.2f} (uniform guess)")
    top.set_ylabel("cross-entropy (nats)")
    top.set_title(f"{os.path.basename(os.path.normpath(os.path.abspath(args.out)))}: "
                  f"loss {loss[0]:.3f} -> {loss[-1]:.3f} in {int(steps[-1])} steps")
    top.legend(frameon=False)
    top.grid(alpha=0.3)
    bottom.plot(steps, tokens, color="#59a14f")
    bottom.set_ylabel("tokens/s")
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    trace_io.save_figure(fig, args.output or os.path.join(args.out, "loss.png"))
    return 0


if __name__ == "__main__":
    trace_io.run_main(main)
