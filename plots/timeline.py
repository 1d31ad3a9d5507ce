#!/usr/bin/env python3
"""Predicted against measured timeline of one training step, as Gantt charts.

Usage:
    .venv/bin/python plots/timeline.py OUT [--step N] [-o PNG] [-v]

OUT is a dtwin output folder (for example out/quickstart) holding predicted.trace.json
(`dtwin simulate`) and/or measured.trace.json (`dtwin train`). The figure is saved as
OUT/timeline.png (or -o PNG), at 120 dpi, or less where that keeps its longer side within
4,000 px. Silent on success (`dtwin run` calls it); -v prints the chosen steps, their step
times, bubbles and rows, and the output path.

- The predicted chart (top) and the measured chart (bottom) share one time axis in ms; each
  step is shifted to start at 0.
- Identical replicas are folded: ranks whose actions match in kind, stage and microbatch and
  whose start, duration and exposed communication differ by at most 0.01% of the step share
  one row, labelled with the ranks it stands for. A prediction in which `dtwin simulate` folded
  data-parallel replicas holds only the simulated ranks; the chart's title says so.
- Up to 32 rows, one row per rank (or folded ranks), top to bottom in rank order. Compute
  actions are boxes coloured by kind (F, B, I, W, OPTIM) with the microbatch number written on
  boxes whose width holds the text (measured in pixels). A rank that runs several (virtual)
  stages draws its later chunks lighter and writes "microbatch/s<stage>" where that fits; each
  row's label lists its stages.
- Above 32 rows, an overview and one pipeline: a heatmap with one line per row, grouped by
  pipeline rank (the ranks that run the same stages), each pixel mixing compute (blue),
  exposed communication (red) and idle (grey) by their shares of its time bin; below it the
  Gantt rows of data-parallel index 0 of each pipeline rank (the lowest rank of each group).
- Under each Gantt row a thin lane shows communication: sends and receives in flight (pale),
  all-reduces (pale purple) and the exposed part of each (red, the tail of the action, drawn
  at least one pixel wide so it stays visible; it is also marked in the compute row, where the
  rank is blocked). The hatched grey background is idle time; a dotted line marks the step's
  end.
- Each chart's title gives the step time and the bubble fraction computed from the events as
  trace/timeline.cpp does: bubble = mean over the trace's ranks of (step - busy compute -
  exposed comm) / step. Each row's label gives its own idle share.
- Measured step: by default the step with the median duration among steps >= 1 (step 0 is
  warm-up), or --step N. A predicted trace holds one step, or sampled steps (dtwin simulate
  --steps), of which the one with the median duration is drawn, step 0 included.
- If only one of the two traces exists, only that one is drawn and the subtitle says so.

Exit status 2, with one line naming the file, when both traces are missing, a trace is not
valid trace JSON, or --step N is not in the measured trace.
"""

import argparse
import functools
import math
import os
import sys
from dataclasses import dataclass

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
COMPUTE_SHARE_COLOUR = "#2f5d8c"  # compute in the overview heatmap

# Row geometry (y grows downwards after invert_yaxis): compute band then communication lane.
COMPUTE_TOP, COMPUTE_HEIGHT = -0.40, 0.58
COMM_TOP, COMM_HEIGHT = 0.24, 0.18

ROW_LIMIT = 32           # rows (after folding) above which a side is an overview and one pipeline
FOLD_TOLERANCE = 1e-4    # of the step time: ranks whose times differ by no more are one row
DPI = 120
MAX_PX = 4000            # the image's longer side, at most
MAX_BINS = 2000          # time bins of the overview heatmap, at most

# Figure geometry in inches.
WIDTH_IN, LEFT_IN, RIGHT_IN = 15.0, 1.9, 0.25
TOP_PAD_IN, TITLE_IN, SUBTITLE_IN = 0.12, 0.34, 0.22
PANEL_TITLE_LINE_IN, PANEL_TITLE_PAD_IN = 0.2, 0.16
XTICKS_IN, XLABEL_IN, LEGEND_ROW_IN = 0.34, 0.26, 0.3
LEGEND_COLUMNS = 9


@dataclass
class Row:
    """One drawn row: a rank, or identical replicas folded into one."""
    ranks: list    # the ranks it stands for, ascending
    events: list   # the events of ranks[0]
    stages: tuple  # the stages its ranks run, ascending


@dataclass
class Panel:
    """One axes of the figure: a Gantt chart of `rows`, or the overview heatmap of them."""
    side: dict
    kind: str      # "gantt" or "overview"
    rows: list
    title: list    # lines
    height_in: float


def lighten(colour, fraction):
    """Mix a '#rrggbb' colour with white."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * fraction):02x}" for c in rgb)


def signature(events):
    """(structure, times) of one rank's events: structure is the (compute or not, kind, stage,
    microbatch) sequence, times the flat list of their starts, durations and exposed times."""
    ordered = sorted(events, key=lambda e: (not e.is_compute, e.start))
    structure = tuple((e.is_compute, e.kind, e.stage, e.microbatch) for e in ordered)
    return structure, [t for e in ordered for t in (e.start, e.dur, e.exposed)]


def fold_replicas(events, tolerance):
    """Rows of identical ranks, in order of their first rank: a rank joins the first row whose
    first rank has the same structure and times within `tolerance`."""
    by_rank = {}
    for e in events:
        by_rank.setdefault(e.rank, []).append(e)
    rows, classes = [], {}
    for rank in sorted(by_rank):
        structure, times = signature(by_rank[rank])
        for row, first_times in classes.get(structure, ()):
            if max(abs(a - b) for a, b in zip(times, first_times)) <= tolerance:
                row.ranks.append(rank)
                break
        else:
            row = Row([rank], by_rank[rank], tuple(sorted({e.stage for e in by_rank[rank]})))
            classes.setdefault(structure, []).append((row, times))
            rows.append(row)
    return rows


def pipeline_ranks(rows):
    """Rows grouped by pipeline rank, [(stages, rows)] in rank order: ranks that run the same
    stages are one pipeline rank's data-parallel replicas."""
    blocks = {}
    for row in rows:
        blocks.setdefault(row.stages, []).append(row)
    return sorted(blocks.items(), key=lambda block: block[1][0].ranks[0])


def rank_ranges(ranks, limit=18):
    """'0-1,14-15' for [0, 1, 14, 15], '0,8,…,120' for an arithmetic progression of stride > 1;
    ends in ',…' where the list passes `limit` characters."""
    stride = ranks[1] - ranks[0] if len(ranks) > 2 else 0
    if stride > 1 and all(b - a == stride for a, b in zip(ranks, ranks[1:])):
        return f"{ranks[0]},{ranks[1]},…,{ranks[-1]}"
    runs = []
    for r in ranks:
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    text = ""
    for first, last in runs:
        part = str(first) if first == last else f"{first}-{last}"
        if text and len(text) + len(part) + 1 > limit:
            return text + ",…"
        text = f"{text},{part}" if text else part
    return text


def stages_text(stages):
    """'stage 3' or 'stages 0,15'."""
    return f"stage{'s' if len(stages) > 1 else ''} {','.join(map(str, stages))}"


def load_side(path, step, label, warmup):
    """The data of one chart, or None when the file does not exist: the chosen step, how it was
    chosen, its statistics and its rows of folded replicas (events in ms). `warmup`: step 0
    is a warm-up step, left out of the median (measured runs; a prediction's sampled steps have
    none)."""
    if not os.path.exists(path):
        return None
    trace = trace_io.load_trace(path)
    all_steps = sorted({e.step for e in trace.events})
    if step is not None:
        chosen, how = step, "--step"
    else:
        chosen = trace_io.median_step(trace.events, skip_first=warmup)
        if len(all_steps) == 1:
            how = "only step"
        else:
            pool = [s for s in all_steps if s >= 1 or not warmup] or all_steps
            how = f"median of steps {pool[0]}-{pool[-1]}" if len(pool) > 1 else "only step after warm-up"
    step_events = trace_io.normalise(trace_io.select_step(trace.events, chosen, path))
    stats = trace_io.step_stats(step_events)
    rows = fold_replicas(step_events, FOLD_TOLERANCE * stats["step"])
    return {"label": label, "path": path, "step": chosen, "how": how, "stats": stats,
            "rows": rows, "ranks": len(stats["idle"]), "named_ranks": trace.named_ranks}


def side_title(side):
    """The first lines of a chart's title: step, step time, bubble, exposed communication, and
    how the trace's ranks became rows."""
    stats, ranks, rows = side["stats"], side["ranks"], len(side["rows"])
    lines = [f"{side['label']}: step {side['step']} ({side['how']}) — "
             f"step time {stats['step']:.1f} ms, bubble {100 * stats['bubble']:.1f}%, "
             f"exposed comm {sum(stats['comm'].values()) / ranks:.1f} ms/rank"]
    notes = []
    if side["named_ranks"] > ranks:
        notes.append(f"the trace holds {ranks:,} of {side['named_ranks']:,} ranks (the "
                     "simulated replicas; dtwin simulate --all-replicas writes every rank)")
    if rows < ranks:
        notes.append(f"{ranks:,} ranks in {rows} rows of identical replicas")
    if notes:
        lines.append("; ".join(notes))
    return lines


def gantt_height_in(rows):
    """Axes height of a Gantt chart of `rows` rows."""
    return (0.62 if rows <= 16 else 0.45) * rows + 0.1


def overview_height_in(rows, blocks):
    """Axes height of the heatmap: room for each pipeline rank's label, within 2 to 10 in."""
    return min(10.0, max(2.0, 0.32 * blocks, 0.04 * rows))


def side_panels(side):
    """The panels of one chart: its Gantt rows, or above ROW_LIMIT rows the overview heatmap
    and the Gantt rows of one pipeline (data-parallel index 0 of each pipeline rank)."""
    rows = side["rows"]
    title = side_title(side)
    if len(rows) <= ROW_LIMIT:
        return [Panel(side, "gantt", rows, title, gantt_height_in(len(rows)))]
    blocks = pipeline_ranks(rows)
    ordered = [row for _, block in blocks for row in block]
    pipeline = [block[0] for _, block in blocks]
    overview_note = ("overview, one line per row, pipeline ranks between white lines: share of "
                     "compute (blue), exposed comm (red) and idle (grey) in each time bin")
    first_ranks = rank_ranges([row.ranks[0] for row in pipeline], limit=60)
    return [Panel(side, "overview", ordered, title + [overview_note],
                  overview_height_in(len(ordered), len(blocks))),
            Panel(side, "gantt", pipeline,
                  [f"one pipeline in detail: data-parallel index 0 of each pipeline rank "
                   f"(ranks {first_ranks}), with the replicas folded into its rows"],
                  gantt_height_in(len(pipeline)))]


def panel_block_in(panel):
    """Height of a panel with its title above and its time tick labels below."""
    return (PANEL_TITLE_LINE_IN * len(panel.title) + PANEL_TITLE_PAD_IN + panel.height_in
            + XTICKS_IN)


def text_measure(fig, size):
    """A cached function giving the width in pixels of a bold label of `size` points, as the
    figure's renderer draws it."""
    from matplotlib.font_manager import FontProperties

    renderer = fig.canvas.get_renderer()
    prop = FontProperties(size=size, weight="bold")

    @functools.lru_cache(maxsize=None)
    def width_px(text):
        return renderer.get_text_width_height_descent(text, prop, ismath=False)[0]

    return width_px


def add_boxes(ax, boxes, facecolors, **style):
    """Draw (x, y, width, height) boxes as one PolyCollection."""
    from matplotlib.collections import PolyCollection

    if boxes:
        verts = [((x, y), (x + w, y), (x + w, y + h), (x, y + h)) for x, y, w, h in boxes]
        ax.add_collection(PolyCollection(verts, facecolors=facecolors, **style))


def draw_lanes(ax, rows, step_ms):
    """The idle (hatched) compute band and the empty communication lane of each row."""
    from matplotlib.patches import Rectangle

    for y in range(rows):
        ax.add_patch(Rectangle((0, y + COMPUTE_TOP), step_ms, COMPUTE_HEIGHT, facecolor=IDLE_FACE,
                               edgecolor=IDLE_HATCH, hatch="///", linewidth=0, zorder=1))
        ax.add_patch(Rectangle((0, y + COMM_TOP), step_ms, COMM_HEIGHT, facecolor="#fafafa",
                               edgecolor="#dddddd", linewidth=0.5, zorder=1))


def box_label(e, several_stages, width_px, text_px):
    """The text written on a compute box: the microbatch (with '/s<stage>' on a rank with
    several stages, where that fits) or 'opt', or None when it does not fit."""
    if e.kind == "OPTIM":
        text = "opt"
    elif e.microbatch is None:
        return None
    else:
        text = str(e.microbatch)
        long = f"{text}/s{e.stage}"
        if several_stages and width_px >= text_px(long) + 4:
            return long
    return text if width_px >= text_px(text) + 4 else None


def draw_gantt(ax, rows, side, px_per_ms, text_px, font):
    """Gantt chart of `rows`, row y = index: compute boxes with the microbatch labels that fit,
    the communication lane below them and the exposed part of each communication in red."""
    step_ms = side["stats"]["step"]
    draw_lanes(ax, len(rows), step_ms)
    min_w = 1.0 / px_per_ms  # one pixel, in ms
    compute, compute_colours, compute_edges = [], [], []
    comm, comm_colours, comm_edges, exposed, blocked = [], [], [], [], []
    for y, row in enumerate(rows):
        chunk = {st: i for i, st in enumerate(row.stages)}
        several = len(row.stages) > 1
        for e in row.events:
            if not e.is_compute:
                comm.append((e.start, y + COMM_TOP, e.dur, COMM_HEIGHT))
                comm_colours.append(ALLREDUCE_COLOUR if e.kind == "ALLREDUCE" else P2P_COLOUR)
                comm_edges.append(0.3 if e.dur * px_per_ms >= 4 else 0.0)
                if e.exposed > 0:
                    # The exposed part is the tail of the action (the wait after the peer
                    # posted); the rank is blocked there, so the compute band is marked too.
                    w = max(min(e.exposed, e.dur), min_w)
                    exposed.append((e.end - w, y + COMM_TOP, w, COMM_HEIGHT))
                    blocked.append((e.end - w, y + COMPUTE_TOP, w, COMPUTE_HEIGHT))
                continue
            later_chunk = several and e.kind != "OPTIM"
            pale = 0.45 * chunk[e.stage] / (len(row.stages) - 1) if later_chunk else 0
            width_px = e.dur * px_per_ms
            compute.append((e.start, y + COMPUTE_TOP, e.dur, COMPUTE_HEIGHT))
            compute_colours.append(lighten(KIND_COLOURS[e.kind], pale))
            compute_edges.append(0.6 if width_px >= 4 else 0.0)  # no seams between slivers
            text = box_label(e, several, width_px, text_px)
            if text:
                ax.text(e.start + e.dur / 2, y + COMPUTE_TOP + COMPUTE_HEIGHT / 2, text,
                        ha="center", va="center", fontsize=font, zorder=4, clip_on=True,
                        color="black" if e.kind in DARK_TEXT_KINDS or pale > 0.3 else "white",
                        fontweight="bold")
    add_boxes(ax, comm, comm_colours, edgecolors="#8a9bb0", linewidths=comm_edges, alpha=0.8,
              zorder=2)
    add_boxes(ax, exposed, EXPOSED_COLOUR, linewidths=0, zorder=3)
    add_boxes(ax, blocked, EXPOSED_COLOUR, linewidths=0, zorder=2.5)
    add_boxes(ax, compute, compute_colours, edgecolors="white", linewidths=compute_edges, zorder=3)
    ax.axvline(step_ms, color="#444444", linestyle=":", linewidth=1, zorder=5)
    ax.set_ylim(len(rows) - 0.45, -0.55)  # first row on top
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([row_label(row, side) for row in rows], fontsize=8)


def row_label(row, side):
    """'rank 0 · stage 0' then the idle share, or for folded replicas 'stage 0 · 16 ranks' then
    which ranks and the idle share."""
    step_ms = side["stats"]["step"]
    idle = (f"idle {100 * side['stats']['idle'][row.ranks[0]] / step_ms:.0f}%"
            if step_ms > 0 else "")
    if len(row.ranks) == 1:
        return f"rank {row.ranks[0]} · {stages_text(row.stages)}\n{idle}"
    return (f"{stages_text(row.stages)} · {len(row.ranks)} ranks\n"
            f"{rank_ranges(row.ranks)}" + (f" · {idle}" if idle else ""))


def covered(intervals, edges):
    """Time each bin [edges[i], edges[i+1]) spends inside the union of (start, end) intervals."""
    import numpy as np

    merged = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    if not merged:
        return np.zeros(len(edges) - 1)
    # The covered time up to t is piecewise linear: flat between intervals, slope 1 inside.
    xs = np.array(merged).ravel()
    cumulative = np.concatenate([[0.0], np.cumsum([end - start for start, end in merged])])
    return np.diff(np.interp(edges, xs, np.repeat(cumulative, 2)[1:-1]))


def utilisation_image(rows, step_ms, bins):
    """RGB image, one line per row and `bins` time bins over the step: each pixel mixes compute,
    exposed communication and idle colours by their shares of the bin."""
    import numpy as np
    from matplotlib.colors import to_rgb

    edges = np.linspace(0.0, step_ms, bins + 1)
    width = np.diff(edges)
    image = np.empty((len(rows), bins, 3))
    colours = np.array([to_rgb(c) for c in (COMPUTE_SHARE_COLOUR, EXPOSED_COLOUR, IDLE_FACE)])
    for y, row in enumerate(rows):
        busy = covered([(e.start, e.end) for e in row.events if e.is_compute], edges) / width
        waiting = covered([(e.end - min(e.exposed, e.dur), e.end) for e in row.events
                           if not e.is_compute and e.exposed > 0], edges) / width
        busy = np.clip(busy, 0.0, 1.0)
        waiting = np.clip(waiting, 0.0, 1.0 - busy)
        shares = np.stack([busy, waiting, 1.0 - busy - waiting], axis=1)
        image[y] = shares @ colours
    return image


def draw_overview(ax, rows, side, px_per_ms):
    """The utilisation heatmap of `rows` (ordered by pipeline rank), one time bin per pixel or
    more, with white lines between pipeline ranks and each pipeline rank's label. More rows
    than pixels are averaged rather than sampled."""
    step_ms = side["stats"]["step"]
    bins = max(1, min(MAX_BINS, int(step_ms * px_per_ms)))
    height_in = ax.get_position().height * ax.figure.get_figheight()
    fewer_rows_than_px = len(rows) <= height_in * ax.figure.dpi
    ax.imshow(utilisation_image(rows, step_ms, bins), aspect="auto",
              interpolation="nearest" if fewer_rows_than_px else "antialiased",
              extent=(0, step_ms, len(rows) - 0.5, -0.5), zorder=1)
    blocks = pipeline_ranks(rows)
    ticks, labels, y = [], [], 0
    every = max(1, math.ceil(len(blocks) * 0.3 / height_in))  # labels 0.3 in apart at least
    for i, (stages, block) in enumerate(blocks):
        if i % every == 0:
            ranks = sum(len(row.ranks) for row in block)
            ticks.append(y + (len(block) - 1) / 2)
            labels.append(f"{stages_text(stages)}\n{ranks:,} ranks · {len(block)} rows")
        y += len(block)
        if y < len(rows):
            ax.axhline(y - 0.5, color="white", linewidth=1.2, zorder=2)
    ax.axvline(step_ms, color="#444444", linestyle=":", linewidth=1, zorder=5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=8)


def style_axes(ax, panel):
    """Title, ticks, spines and grid of one panel."""
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelbottom=True, labelsize=9)
    for spine in ("top", "right", "left"):
        ax.spines[spine].set_visible(False)
    if panel.kind == "gantt":
        ax.grid(axis="x", color="#e0e0e0", linewidth=0.6, zorder=0)
        ax.set_axisbelow(True)
    ax.set_title("\n".join(panel.title), fontsize=10, loc="left", pad=6)


def legend_handles(panels):
    """Legend entries for what the panels draw."""
    from matplotlib.patches import Patch

    kinds = {e.kind for p in panels if p.kind == "gantt" for row in p.rows for e in row.events}
    handles = [Patch(facecolor=KIND_COLOURS[k], label=KIND_LABELS[k])
               for k in trace_io.COMPUTE_KINDS if k in kinds]
    handles.append(Patch(facecolor=P2P_COLOUR, edgecolor="#8a9bb0", label="send/recv in flight"))
    if "ALLREDUCE" in kinds:
        handles.append(Patch(facecolor=ALLREDUCE_COLOUR, edgecolor="#8a9bb0", label="all-reduce"))
    handles.append(Patch(facecolor=EXPOSED_COLOUR, label="exposed comm"))
    handles.append(Patch(facecolor=IDLE_FACE, edgecolor=IDLE_HATCH, hatch="///", label="idle"))
    if any(p.kind == "overview" for p in panels):
        handles.append(Patch(facecolor=COMPUTE_SHARE_COLOUR, label="compute (overview)"))
    return handles


def figure_title(sides, out, pred_path, meas_path):
    """(title, subtitle) of the figure: the output folder, then the step-time ratio or which
    trace is missing."""
    name = os.path.basename(os.path.normpath(os.path.abspath(out)))
    if len(sides) == 1:
        missing = meas_path if sides[0]["path"] == pred_path else pred_path
        subtitle = (f"{sides[0]['label'].split()[0].lower()} only: "
                    f"{os.path.basename(missing)} not found")
    elif sides[0]["stats"]["step"] > 0:
        ratio = sides[1]["stats"]["step"] / sides[0]["stats"]["step"]
        subtitle = f"measured / predicted step time = {ratio:.2f}"
    else:
        subtitle = "predicted step time 0"
    return f"dtwin timeline — {name}", subtitle


def draw_figure(sides, title, subtitle, plt):
    """The figure and its dpi. Every block is placed at a fixed height in inches, top down:
    title, subtitle, then each panel's title, axes and time ticks, then the time label and the
    legend, so no text lands on another; the dpi drops where the longer side would pass
    MAX_PX."""
    panels = [p for side in sides for p in side_panels(side)]
    handles = legend_handles(panels)
    legend_in = LEGEND_ROW_IN * math.ceil(len(handles) / LEGEND_COLUMNS) + 0.1
    top_in = TOP_PAD_IN + TITLE_IN + SUBTITLE_IN
    height_in = top_in + sum(panel_block_in(p) for p in panels) + XLABEL_IN + legend_in
    dpi = min(DPI, int(MAX_PX / max(WIDTH_IN, height_in)))
    fig = plt.figure(figsize=(WIDTH_IN, height_in), dpi=dpi)
    plot_w_in = WIDTH_IN - LEFT_IN - RIGHT_IN
    span = max(s["stats"]["step"] for s in sides) * 1.01 or 1.0
    px_per_ms = plot_w_in * dpi / span
    font = 8 if max(len(p.rows) for p in panels) <= 4 else 7
    text_px = text_measure(fig, font)

    y_in, first = top_in, None
    for panel in panels:
        y_in += PANEL_TITLE_LINE_IN * len(panel.title) + PANEL_TITLE_PAD_IN
        rect = [LEFT_IN / WIDTH_IN, 1 - (y_in + panel.height_in) / height_in,
                plot_w_in / WIDTH_IN, panel.height_in / height_in]
        ax = fig.add_axes(rect, sharex=first)
        first = first or ax
        if panel.kind == "overview":
            draw_overview(ax, panel.rows, panel.side, px_per_ms)
        else:
            draw_gantt(ax, panel.rows, panel.side, px_per_ms, text_px, font)
        style_axes(ax, panel)
        y_in += panel.height_in + XTICKS_IN
    first.set_xlim(0, span)
    ax.set_xlabel("time since step start (ms)")

    fig.suptitle(title, fontsize=13, x=LEFT_IN / WIDTH_IN, y=1 - TOP_PAD_IN / height_in,
                 ha="left", va="top")
    fig.text(LEFT_IN / WIDTH_IN, 1 - (TOP_PAD_IN + TITLE_IN) / height_in, subtitle,
             fontsize=10, color="#444444", ha="left", va="top")
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), LEGEND_COLUMNS),
               fontsize=9, frameon=False, bbox_to_anchor=(0.5, 0.0))
    return fig, dpi


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
    title, subtitle = figure_title(sides, args.out, pred_path, meas_path)
    fig, dpi = draw_figure(sides, title, subtitle, plt)
    output = args.output or os.path.join(args.out, "timeline.png")
    if args.verbose:
        for s in sides:
            print(f"{s['label']}: step {s['step']}, {s['stats']['step']:.1f} ms, "
                  f"bubble {100 * s['stats']['bubble']:.1f}%, {s['ranks']} ranks in "
                  f"{len(s['rows'])} rows")
    trace_io.save_figure(fig, output, dpi=dpi, verbose=args.verbose)
    return 0


if __name__ == "__main__":
    trace_io.run_main(main)
