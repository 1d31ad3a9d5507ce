#!/usr/bin/env python3
"""Loss curve and throughput of a `dtwin train` run.

Usage:
    .venv/bin/python plots/loss.py OUT [--vocab V] [-o PNG] [-v]

Reads OUT/loss.csv (columns step, loss, tokens_per_s, seconds; `seconds` is optional here) and
draws two panels on one step axis:

- top: the training loss against the step, with ln(V) dashed (the loss of a uniform guess over
  the vocabulary; V = 4096 by default, --vocab 0 leaves the line out) and, from 20 steps on, a
  centred moving average;
- bottom: tokens/s per step, with the mean over the steps after the first (step 1 is warm-up)
  and, when OUT/predicted.summary.json exists, the simulator's predicted tokens/s dotted.

Saves OUT/loss.png (or -o PNG) at 120 dpi, silently unless -v. Exit status 2, with one line naming the file, when
loss.csv (or predicted.summary.json, if present) is missing or malformed.
"""

import argparse
import json
import math
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_io  # noqa: E402


def moving_average(values, window):
    """Centred moving average that ignores NaN; the window shrinks at the ends."""
    half = window // 2
    out = []
    for i in range(len(values)):
        chunk = [v for v in values[max(0, i - half):i + half + 1] if math.isfinite(v)]
        out.append(sum(chunk) / len(chunk) if chunk else float("nan"))
    return out


def predicted_tokens_per_s(out_dir):
    """tokens_per_s from OUT/predicted.summary.json, or None when the file does not exist."""
    path = os.path.join(out_dir, "predicted.summary.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f).get("tokens_per_s")
    except (OSError, UnicodeDecodeError, AttributeError) as e:
        raise trace_io.InputError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise trace_io.InputError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise trace_io.InputError(f"{path}: tokens_per_s must be a number, got {value!r}")
    return float(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", metavar="OUT", help="dtwin output folder with loss.csv")
    parser.add_argument("--vocab", type=int, default=4096,
                        help="vocabulary size for the ln(V) line (default 4096; 0 = no line)")
    parser.add_argument("-o", "--output", default=None, help="PNG path (default OUT/loss.png)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the output path")
    args = parser.parse_args()
    if args.vocab < 0 or args.vocab == 1:
        parser.error(f"--vocab must be 0 (no line) or at least 2, got {args.vocab}")

    path = os.path.join(args.out, "loss.csv")
    columns = trace_io.read_csv(path, ["step", "loss", "tokens_per_s"])
    steps = trace_io.parse_floats(path, "step", columns["step"])
    loss = trace_io.parse_floats(path, "loss", columns["loss"], allow_empty=True)
    tokens = trace_io.parse_floats(path, "tokens_per_s", columns["tokens_per_s"], allow_empty=True)
    if not all(math.isfinite(s) for s in steps):
        raise trace_io.InputError(f"{path}: column step: every value must be a finite number")
    order = sorted(range(len(steps)), key=lambda i: steps[i])
    steps, loss, tokens = ([c[i] for i in order] for c in (steps, loss, tokens))
    finite_loss = [v for v in loss if math.isfinite(v)]
    if not finite_loss:
        raise trace_io.InputError(f"{path}: column loss: no finite value")
    predicted = predicted_tokens_per_s(args.out)

    plt = trace_io.import_pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6),
                                      gridspec_kw={"height_ratios": [3, 1.3]})
    smooth = len(steps) >= 20
    top.plot(steps, loss, color="#4e79a7", linewidth=1 if smooth else 1.5,
             alpha=0.45 if smooth else 1.0, label="training loss")
    if smooth:
        window = max(5, len(steps) // 15) | 1
        top.plot(steps, moving_average(loss, window), color="#1f3b63", linewidth=2,
                 label=f"moving average ({window} steps)")
    if args.vocab:
        ln_v = math.log(args.vocab)
        top.axhline(ln_v, color="#888888", linestyle="--",
                    label=f"ln {args.vocab} = {ln_v:.2f} (uniform guess)")
    top.set_ylabel("cross-entropy (nats)")
    name = os.path.basename(os.path.normpath(os.path.abspath(args.out)))
    tail = finite_loss[-10:]
    top.set_title(f"{name}: loss {finite_loss[0]:.3f} -> {finite_loss[-1]:.3f} in "
                  f"{len(steps)} steps (mean of last {len(tail)}: {sum(tail) / len(tail):.3f})",
                  fontsize=11)
    top.legend(frameon=False, loc="upper right")
    top.grid(alpha=0.3)

    bottom.plot(steps, tokens, color="#59a14f", linewidth=1.2, label="measured")
    after_warmup = [t for s, t in zip(steps, tokens) if s > steps[0] and math.isfinite(t)]
    if after_warmup:
        mean = sum(after_warmup) / len(after_warmup)
        bottom.axhline(mean, color="#2d6a27", linestyle="--", linewidth=1,
                       label=f"mean after step {int(steps[0])}: {mean:,.0f}")
    if predicted is not None:
        bottom.axhline(predicted, color="#b07aa1", linestyle=":", linewidth=1.5,
                       label=f"predicted: {predicted:,.0f}")
    bottom.set_ylabel("tokens/s")
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    bottom.legend(frameon=False, fontsize=8, loc="best", ncol=3)
    fig.tight_layout()
    output = args.output or os.path.join(args.out, "loss.png")
    trace_io.save_figure(fig, output, verbose=args.verbose)
    return 0


if __name__ == "__main__":
    trace_io.run_main(main)
