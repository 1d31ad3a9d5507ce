#!/usr/bin/env python3
"""Predicted against measured timeline of one training step, as two Gantt charts.

Usage:
    .venv/bin/python plots/timeline.py OUT [--step N] [-o PNG] [-v]

OUT is a dtwin output folder (for example out/quickstart) holding predicted.trace.json
(`dtwin simulate`) and/or measured.trace.json (`dtwin train`). The figure is saved as
OUT/timeline.png (or -o PNG), at 120 dpi. Silent on success (`dtwin run` calls it); -v prints
the chosen steps, their step times and bubbles, and the output path.

- The predicted chart (top) and the measured chart (bottom) share one time axis in ms; each
  step is shifted to start at 0.
- One row per rank, rank 0 on top. Compute actions are boxes coloured by kind (F, B, I, W,
  OPTIM) with the microbatch number written on boxes wide enough to hold it. A rank that runs
  several (virtual) stages draws its later chunks lighter and writes "microbatch/s<stage>"
  where that fits; each rank's label lists its stages.
- Under each row a thin lane shows communication: sends and receives in flight (pale),
  all-reduces (pale purple) and the exposed part of each (red, the tail of the action, drawn
  at least one pixel wide so it stays visible; it is also marked in the compute row, where the
  rank is blocked). The hatched grey background is idle time; a dotted line marks the step's
  end.
- Each title gives the step time and the bubble fraction computed from the events as
  trace/timeline.cpp does: bubble = mean over ranks of (step - busy compute - exposed
  comm) / step. Each rank's label gives its own idle share.
- Measured step: by default the step with the median duration among steps >= 1 (step 0 is
  warm-up), or --step N. A predicted trace holds one step, or sampled steps (dtwin simulate
  --steps), of which the one with the median duration is drawn, step 0 included.
- If only one of the two traces exists, only that one is drawn and the title says so.

Exit status 2, with one line naming the file, when both traces are missing, a trace is not
valid trace JSON, or --step N is not in the measured trace.
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_io  # noqa: E402

KIND_COLOURS = {
    "F": "#4e79a7",      # blue
    "B": "#59a14f",      # green
    "I": "#f28e2b",      # orange
    "W": "#edc948",      # yellow
    "OPTIM": "#b07aa1",  # purple
}
KIND_LABELS = {"F": "F forward", "B": "B backward", "I": "I input grad", "W": "W weight grad",
               "OPTIM": "OPTIM optimizer"}
DARK_TEXT_KINDS = {"W", "I"}  # light boxes get black digits
P2P_COLOUR = "#c9d3df"
ALLREDUCE_COLOUR = "#d7c3e0"
EXPOSED_COLOUR = "#d62728"
IDLE_FACE = "#f2f2f2"
IDLE_HATCH = "#d0d0d0"

# Row geometry (y grows downwards after invert_yaxis): compute band then communication lane.
COMPUTE_TOP, COMPUTE_HEIGHT = -0.40, 0.58
COMM_TOP, COMM_HEIGHT = 0.24, 0.18

DPI = 120


def lighten(colour, fraction):
    """Mix a '#rrggbb' colour with white."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * fraction):02x}" for c in rgb)


def load_side(path, step, label, warmup):
    """(events in ms, chosen step, how it was chosen) or None when the file does not exist.
    `warmup`: step 0 is a warm-up step, left out of the median (measured runs; a prediction's
    sampled steps have none)."""
    if not os.path.exists(path):
        return None
    events = trace_io.load_events(path)
    all_steps = sorted({e.step for e in events})
    if step is not None:
        chosen, how = step, "--step"
    else:
        chosen = trace_io.median_step(events, skip_first=warmup)
        if len(all_steps) == 1:
            how = "only step"
        else:
            pool = [s for s in all_steps if s >= 1 or not warmup] or all_steps
            how = f"median of steps {pool[0]}-{pool[-1]}" if len(pool) > 1 else "only step after warm-up"
    step_events = trace_io.normalise(trace_io.select_step(events, chosen, path))
    ranks = trace_io.world_size(events)
    stats = trace_io.step_stats(step_events, ranks)
    return {"label": label, "path": path, "events": step_events, "step": chosen, "how": how,
            "ranks": ranks, "stats": stats}


def draw_side(ax, side, plt, px_per_ms):
    from matplotlib.patches import Rectangle

    ranks, stats = side["ranks"], side["stats"]
    step_ms = stats["step"]
    min_w = 1.0 / px_per_ms  # one pixel, in ms
    for r in range(ranks):
        ax.add_patch(Rectangle((0, r + COMPUTE_TOP), step_ms, COMPUTE_HEIGHT, facecolor=IDLE_FACE,
                               edgecolor=IDLE_HATCH, hatch="///", linewidth=0, zorder=1))
        ax.add_patch(Rectangle((0, r + COMM_TOP), step_ms, COMM_HEIGHT, facecolor="#fafafa",
                               edgecolor="#dddddd", linewidth=0.5, zorder=1))

    # Stages per rank: with virtual stages (interleaved 1F1B) a rank runs several, and later
    # chunks are drawn lighter and labelled "microbatch/s<stage>" where that fits.
    stages = {}
    for e in side["events"]:
        stages.setdefault(e.rank, set()).add(e.stage)
    chunk = {r: {st: i for i, st in enumerate(sorted(own))} for r, own in stages.items()}

    font = 8 if ranks <= 4 else 7
    char_px = font * 0.62 * DPI / 72
    for e in side["events"]:
        if e.is_compute:
            colour = KIND_COLOURS[e.kind]
            chunks = len(stages[e.rank])
            pale = 0.45 * chunk[e.rank][e.stage] / (chunks - 1) if chunks > 1 and e.kind != "OPTIM" else 0
            colour = lighten(colour, pale)
            ax.add_patch(Rectangle((e.start, e.rank + COMPUTE_TOP), e.dur, COMPUTE_HEIGHT,
                                   facecolor=colour, edgecolor="white", linewidth=0.6, zorder=3))
            text = "opt" if e.kind == "OPTIM" else (str(e.microbatch) if e.microbatch is not None else "")
            width_px = e.dur * px_per_ms
            if e.kind != "OPTIM" and len(stages[e.rank]) > 1 and text:
                long = f"{text}/s{e.stage}"
                if width_px >= len(long) * char_px + 4:
                    text = long
            if text and width_px >= len(text) * char_px + 4:
                ax.text(e.start + e.dur / 2, e.rank + COMPUTE_TOP + COMPUTE_HEIGHT / 2, text,
                        ha="center", va="center", fontsize=font, zorder=4, clip_on=True,
                        color="black" if e.kind in DARK_TEXT_KINDS or pale > 0.3 else "white",
                        fontweight="bold")
        else:
            colour = ALLREDUCE_COLOUR if e.kind == "ALLREDUCE" else P2P_COLOUR
            ax.add_patch(Rectangle((e.start, e.rank + COMM_TOP), e.dur, COMM_HEIGHT,
                                   facecolor=colour, edgecolor="#8a9bb0", linewidth=0.3,
                                   alpha=0.8, zorder=2))
            if e.exposed > 0:
                # The exposed part is the tail of the action (the wait after the peer posted).
                w = max(min(e.exposed, e.dur), min_w)
                ax.add_patch(Rectangle((e.end - w, e.rank + COMM_TOP), w, COMM_HEIGHT,
                                       facecolor=EXPOSED_COLOUR, linewidth=0, zorder=3))
                # The rank is blocked there, so mark the compute band too.
                ax.add_patch(Rectangle((e.end - w, e.rank + COMPUTE_TOP), w, COMPUTE_HEIGHT,
                                       facecolor=EXPOSED_COLOUR, linewidth=0, zorder=2.5))

    ax.axvline(step_ms, color="#444444", linestyle=":", linewidth=1, zorder=5)
    ax.set_ylim(ranks - 0.45, -0.55)  # rank 0 on top
    ax.set_yticks(range(ranks))
    labels = []
    for r in range(ranks):
        own = sorted(stages.get(r, ()))
        text = f"rank {r}"
        if own:
            text += f" · stage{'s' if len(own) > 1 else ''} {','.join(map(str, own))}"
        if step_ms > 0:
            text += f"\nidle {100 * stats['idle'][r] / step_ms:.0f}%"
        labels.append(text)
    ax.set_yticklabels(labels, fontsize=8)
    ax.tick_params(axis="y", length=0)
    for spine in ("top", "right", "left"):
        ax.spines[spine].set_visible(False)
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.set_title(f"{side['label']}: step {side['step']} ({side['how']}) — "
                 f"step time {step_ms:.1f} ms, bubble {100 * stats['bubble']:.1f}%, "
                 f"exposed comm {sum(stats['comm']) / ranks:.1f} ms/rank",
                 fontsize=10, loc="left")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", metavar="OUT", help="dtwin output folder with the trace files")
    parser.add_argument("--step", type=int, default=None,
                        help="measured step to draw (default: median-duration step >= 1)")
    parser.add_argument("-o", "--output", default=None, help="PNG path (default OUT/timeline.png)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the chosen steps and the output path (quiet by default)")
    args = parser.parse_args()

    if not os.path.isdir(args.out):
        raise trace_io.InputError(f"{args.out}: no such folder")
    pred_path = os.path.join(args.out, "predicted.trace.json")
    meas_path = os.path.join(args.out, "measured.trace.json")
    sides = [s for s in (load_side(pred_path, None, "Predicted (SimGrid)", False),
                         load_side(meas_path, args.step, "Measured (LibTorch)", True)) if s]
    if not sides:
        raise trace_io.InputError(f"{pred_path}: no such file (nor {meas_path})")
    if args.step is not None and not os.path.exists(meas_path):
        raise trace_io.InputError(f"{meas_path}: no such file (--step applies to the measured trace)")

    plt = trace_io.import_pyplot()
    from matplotlib.patches import Patch

    width_in = 15.0
    heights = [0.62 * s["ranks"] + 0.9 for s in sides]
    fig, axes = plt.subplots(len(sides), 1, sharex=True, figsize=(width_in, sum(heights) + 1.5),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    axes = axes[:, 0]
    left, right = 0.085, 0.985
    span = max(s["stats"]["step"] for s in sides) * 1.01
    px_per_ms = (right - left) * width_in * DPI / span
    for ax, side in zip(axes, sides):
        draw_side(ax, side, plt, px_per_ms)
    axes[-1].set_xlim(0, span)
    axes[-1].set_xlabel("time since step start (ms)")
    for ax in axes[:-1]:
        ax.tick_params(axis="x", labelbottom=True)

    name = os.path.basename(os.path.normpath(os.path.abspath(args.out)))
    title = f"dtwin timeline — {name}"
    if len(sides) == 1:
        missing = meas_path if sides[0]["path"] == pred_path else pred_path
        title += f"   ({sides[0]['label'].split()[0].lower()} only: {os.path.basename(missing)} not found)"
    elif sides[0]["stats"]["step"] > 0:
        ratio = sides[1]["stats"]["step"] / sides[0]["stats"]["step"]
        title += f"   (measured / predicted step time = {ratio:.2f})"
    fig.suptitle(title, fontsize=12, x=left, ha="left")

    kinds = {e.kind for s in sides for e in s["events"]}
    handles = [Patch(facecolor=KIND_COLOURS[k], label=KIND_LABELS[k])
               for k in trace_io.COMPUTE_KINDS if k in kinds]
    handles.append(Patch(facecolor=P2P_COLOUR, edgecolor="#8a9bb0", label="send/recv in flight"))
    if "ALLREDUCE" in kinds:
        handles.append(Patch(facecolor=ALLREDUCE_COLOUR, edgecolor="#8a9bb0", label="all-reduce"))
    handles.append(Patch(facecolor=EXPOSED_COLOUR, label="exposed comm"))
    handles.append(Patch(facecolor=IDLE_FACE, edgecolor=IDLE_HATCH, hatch="///", label="idle"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    bottom_in, top_in = 0.85, 0.55
    total_h = fig.get_figheight()
    fig.subplots_adjust(left=left, right=right, bottom=bottom_in / total_h,
                        top=1 - top_in / total_h, hspace=0.75 / (sum(heights) / len(sides)))

    output = args.output or os.path.join(args.out, "timeline.png")
    if args.verbose:
        for s in sides:
            print(f"{s['label']}: step {s['step']}, {s['stats']['step']:.1f} ms, "
                  f"bubble {100 * s['stats']['bubble']:.1f}%")
    trace_io.save_figure(fig, output, dpi=DPI, verbose=args.verbose)
    return 0


if __name__ == "__main__":
    trace_io.run_main(main)
