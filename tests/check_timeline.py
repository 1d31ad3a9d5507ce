#!/usr/bin/env python3
"""Checks plots/timeline.py at small and large scale on synthetic pipeline traces.

For traces of 2, 16 and 64 rows, 1,024 identical replicas, a prediction that holds only the
simulated replicas, a 64-stage pipeline and a predicted + measured pair:

- identical replicas fold into one row each, labelled with their ranks; replicas that differ
  stay apart;
- above 32 rows a side becomes an overview heatmap plus one pipeline (the lowest rank of each
  pipeline rank);
- no title, subtitle or chart title overlaps another text or an axes, each stays inside the
  figure, and no two tick labels of one axes overlap;
- the PNG's longer side is at most 4,000 px;
- microbatch labels are written only where the box holds them;
- bad input exits 2 with one line naming the file.

Usage: check_timeline.py ROOT   (the repository root; run with the project's .venv/bin/python)
Exit 0 when every check passes, 1 listing the failures.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

F_MS, B_MS, SEND_MS = 10.0, 20.0, 1.0
MAX_PX = 4000  # issue 57: the image's longer side, at most


def pipeline_events(pp, dp, microbatches, jitter, dp_simulated):
    """X events of a GPipe step on pp × dp ranks (rank = p·dp + d): forwards, then backwards,
    a send after each forward, an all-reduce and the optimizer. Replica d runs (1 + jitter·d)
    times slower, so replicas fold only without jitter."""
    events = []
    for p in range(pp):
        for d in range(dp_simulated):
            rank, slow = p * dp + d, 1.0 + jitter * d

            def add(name, kind, tid, start_ms, dur_ms, microbatch=None, exposed_ms=0.0):
                args = {"stage": p, "kind": kind, "step": 0, "exposed_comm_us": exposed_ms * 1e3}
                if microbatch is not None:
                    args["microbatch"] = microbatch
                events.append({"name": name, "ph": "X", "pid": rank, "tid": tid,
                               "ts": start_ms * slow * 1e3, "dur": dur_ms * slow * 1e3,
                               "args": args})

            for m in range(microbatches):
                add(f"{p}F{m}", "F", 0, (p + m) * F_MS, F_MS, m)
                if p < pp - 1:
                    add(f"{p}SEND_F{m}", "SEND_F", 1, (p + m + 1) * F_MS, SEND_MS, m, 0.1)
                start_b = (pp + microbatches - 1) * F_MS + (pp - 1 - p + m) * B_MS
                add(f"{p}B{m}", "B", 0, start_b, B_MS, m)
            end = (pp + microbatches - 1) * F_MS + (pp - 1 + microbatches) * B_MS
            add(f"{p}ALLREDUCE", "ALLREDUCE", 1, end, 5.0, None, 2.0)
            add(f"{p}OPTIM", "OPTIM", 0, end + 5.0, 3.0)
    return events


def write_trace(path, pp, dp, microbatches=8, jitter=0.0, dp_simulated=None):
    """A trace file of pipeline_events, naming all pp × dp ranks in its metadata."""
    meta = [{"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}}
            for r in range(pp * dp)]
    events = pipeline_events(pp, dp, microbatches, jitter, dp_simulated or dp)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": meta + events}, f)


def png_size(path):
    """(width, height) from a PNG's header."""
    with open(path, "rb") as f:
        header = f.read(24)
    return struct.unpack(">II", header[16:24])


def overlaps(a, b):
    """Whether two display-space boxes share more than a pixel's sliver."""
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > 1) and (min(a.y1, b.y1) - max(a.y0, b.y0) > 1)


def layout_failures(fig):
    """Titles overprinted, outside the figure, or tick labels on each other."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    title_strings = {fig.get_suptitle()} | {t.get_text() for t in fig.texts}
    title_strings |= {ax.get_title(loc="left") for ax in fig.axes}
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    titles = [t for t in texts if t.get_text() in title_strings]
    others = [t.get_window_extent(renderer) for t in texts if t not in titles]
    others += [ax.get_window_extent(renderer) for ax in fig.axes]
    failures = []
    inside = fig.bbox
    boxes = [(t.get_text().split("\n")[0][:50], t.get_window_extent(renderer)) for t in titles]
    for i, (name, box) in enumerate(boxes):
        if box.x0 < inside.x0 - 1 or box.y0 < inside.y0 - 1 or box.y1 > inside.y1 + 1:
            failures.append(f"title {name!r} leaves the figure")
        if any(overlaps(box, other) for other in others):
            failures.append(f"title {name!r} overlaps another text or an axes")
        if any(overlaps(box, b) for _, b in boxes[i + 1:]):
            failures.append(f"title {name!r} overlaps another title")
    for ax in fig.axes:
        ticks = [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
        if any(overlaps(a, b) for i, a in enumerate(ticks) for b in ticks[i + 1:]):
            failures.append("two row labels overlap")
    return failures


def render_case(timeline, plt, out, png):
    """Draw OUT's traces as timeline.py does; ([side], [failure]) with the PNG saved."""
    pred = os.path.join(out, "predicted.trace.json")
    meas = os.path.join(out, "measured.trace.json")
    sides = [s for s in (timeline.load_side(pred, None, "Predicted (SimGrid)", False),
                         timeline.load_side(meas, None, "Measured (LibTorch)", True)) if s]
    title, subtitle = timeline.figure_title(sides, out, pred, meas)
    fig, dpi = timeline.draw_figure(sides, title, subtitle, plt)
    failures = layout_failures(fig)
    fig.savefig(png, dpi=dpi)
    plt.close(fig)
    width, height = png_size(png)
    if max(width, height) > MAX_PX:
        failures.append(f"{width} x {height} px, longer than {MAX_PX}")
    return sides, failures


def check_scales(timeline, plt, scratch):
    """Each scale's rows, modes and layout."""
    cases = [  # name, predicted (pp, dp, jitter, simulated dp), measured, rows, overview
        ("2 rows", (2, 1, 0.0, None), None, 2, False),
        ("16 rows", (16, 1, 0.0, None), None, 16, False),
        ("64 rows", (8, 8, 1e-3, None), None, 64, True),
        ("1024 identical ranks", (8, 128, 0.0, None), None, 8, False),
        ("16 simulated of 128 replicas", (8, 128, 0.0, 16), None, 8, False),
        ("64-stage pipeline", (64, 2, 1e-3, None), None, 128, True),
        ("predicted and measured", (8, 8, 1e-3, None), (2, 1, 0.0, None), 64, True),
    ]
    failures = []
    for name, (pp, dp, jitter, simulated), measured, rows, overview in cases:
        out = os.path.join(scratch, name.replace(" ", "-"))
        write_trace(os.path.join(out, "predicted.trace.json"), pp, dp, jitter=jitter,
                    dp_simulated=simulated)
        if measured:
            write_trace(os.path.join(out, "measured.trace.json"), *measured[:2])
        sides, problems = render_case(timeline, plt, out, out + ".png")
        side = sides[0]
        if len(side["rows"]) != rows:
            problems.append(f"{len(side['rows'])} rows, expected {rows}")
        panels = timeline.side_panels(side)
        if (panels[0].kind == "overview") != overview:
            problems.append(f"overview {'missing' if overview else 'drawn'}")
        if overview and [row.ranks[0] for row in panels[1].rows] != [p * dp for p in range(pp)]:
            problems.append("the detailed pipeline is not data-parallel index 0")
        if dp > 1 and not jitter:
            n = simulated or dp
            label = timeline.row_label(side["rows"][0], side)
            if f"{n} ranks" not in label or f"0-{n - 1}" not in label:
                problems.append(f"folded row labelled {label!r}")
        note = f"holds {pp * simulated} of {pp * dp:,} ranks" if simulated else None
        if note and note not in timeline.side_title(side)[1]:
            problems.append("the title does not say the trace holds only the simulated ranks")
        failures += [f"{name}: {p}" for p in problems]
    return failures


def check_labels(timeline, trace_io):
    """Microbatch labels only where they fit; rank lists."""
    def event(stage, dur):
        return trace_io.Event("x", 0, 0.0, dur, "F", stage, 3, 0, 0.0)

    def width_px(text):
        return 6.0 * len(text)

    box_label, rank_ranges = timeline.box_label, timeline.rank_ranges
    failures = []
    for label, got, want in [
            ("wide box", box_label(event(0, 1), False, 40, width_px), "3"),
            ("narrow box", box_label(event(0, 1), False, 9, width_px), None),
            ("wide box, several stages", box_label(event(4, 1), True, 40, width_px), "3/s4"),
            ("ranges", rank_ranges([0, 1, 14, 15]), "0-1,14-15"),
            ("stride", rank_ranges(list(range(0, 121, 8))), "0,8,…,120"),
            ("long list", rank_ranges(list(range(0, 200, 3)) + [202]), "0,3,6,9,12,15,18,…")]:
        if got != want:
            failures.append(f"{label}: {got!r}, expected {want!r}")
    return failures


def check_bad_input(script, scratch):
    """Exit 2 with one line naming the file."""
    bad = os.path.join(scratch, "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "predicted.trace.json"), "w", encoding="utf-8") as f:
        f.write("{not json")
    failures = []
    for args, name in [([os.path.join(scratch, "absent")], "absent"),
                       ([bad], "predicted.trace.json"),
                       ([os.path.join(scratch, "2-rows"), "--step", "7"], "measured.trace.json")]:
        run = subprocess.run([sys.executable, script] + args, capture_output=True, text=True)
        if run.returncode != 2 or name not in run.stderr or "Traceback" in run.stderr:
            failures.append(f"timeline.py {' '.join(args)}: exit {run.returncode}, {run.stderr!r}")
    good = subprocess.run([sys.executable, script, os.path.join(scratch, "64-rows")],
                          capture_output=True, text=True)
    if good.returncode != 0 or not os.path.exists(os.path.join(scratch, "64-rows", "timeline.png")):
        failures.append(f"timeline.py on 64 rows: exit {good.returncode}, {good.stderr!r}")
    return failures


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 1
    plots = os.path.join(os.path.abspath(sys.argv[1]), "plots")
    sys.dont_write_bytecode = True
    sys.path.insert(0, plots)
    import timeline
    import trace_io

    plt = trace_io.import_pyplot()
    with tempfile.TemporaryDirectory(prefix="check-timeline-") as scratch:
        failures = (check_scales(timeline, plt, scratch) + check_labels(timeline, trace_io)
                    + check_bad_input(os.path.join(plots, "timeline.py"), scratch))
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"check_timeline: {'ok' if not failures else f'{len(failures)} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
