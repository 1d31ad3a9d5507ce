"""Shared input helpers for the dtwin plotting scripts (timeline.py, loss.py, sweep.py).

Not a script. It reads the Chrome trace-event JSON that `dtwin simulate` and `dtwin train`
write (predicted.trace.json, measured.trace.json) and small CSV files, and turns bad input
into an `InputError` that names the file; `run_main` turns that error into one line on stderr
and exit code 2, so no script shows a traceback for bad input.

Trace format: {"traceEvents": [...]}. Metadata events have "ph": "M". Each executed action is
one "ph": "X" event with "name" (canonical action string such as "0F1", "1SEND_F0",
"0ALLREDUCE"), "pid" = rank, "tid" (its track, not read: the kind tells compute from
communication), "ts"/"dur" in microseconds and "args": {stage, microbatch, kind, step,
exposed_comm_us}. Flow ("s", "f") and counter ("C") events are not read.

Helpers:
  load_trace(path)           -> Trace: its Event list (the X events, times in microseconds) and
                                the ranks its metadata names (a folded prediction names them all)
  steps(events)              -> {step: [Event, ...]}
  step_span_us(events)       -> (first start, last end) of a set of events
  select_step(events, step)  -> the events of one step (InputError if it is absent)
  median_step(events, skip_first=True) -> step number with the median duration
  normalise(events)          -> copies with times in ms, the step starting at 0
  step_stats(events)         -> step time, busy compute, exposed comm and idle per rank, bubble
  read_csv(path, required, optional) -> {column: [str, ...]}
"""

import csv
import json
import math
import os
import re
import sys
from dataclasses import dataclass, replace

COMPUTE_KINDS = ("F", "B", "I", "W", "OPTIM")
COMM_KINDS = ("SEND_F", "RECV_F", "SEND_B", "RECV_B", "ALLREDUCE", "UNSHARD", "RESHARD",
              "REDUCE_GRAD")
ALL_KINDS = COMPUTE_KINDS + COMM_KINDS

_NAME = re.compile(
    r"^(\d+)(SEND_F|RECV_F|SEND_B|RECV_B|ALLREDUCE|UNSHARD|RESHARD|REDUCE_GRAD|OPTIM|F|B|I|W)(\d*)$")


class InputError(Exception):
    """Bad or missing input; str() is the message printed after 'error: '."""


@dataclass(frozen=True)
class Event:
    name: str
    rank: int
    start: float  # microseconds in the file; milliseconds after normalise()
    dur: float
    kind: str
    stage: int
    microbatch: object  # int or None
    step: int
    exposed: float  # exposed communication, same unit as start/dur

    @property
    def end(self):
        return self.start + self.dur

    @property
    def is_compute(self):
        return self.kind in COMPUTE_KINDS


def _number(value, what, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: {what} must be a finite number, got {value!r}")
    return float(value)


def _event(raw, index, path):
    where = f"{path}: traceEvents[{index}]"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected an object")
    name = raw.get("name")
    if not isinstance(name, str):
        raise InputError(f"{where}: missing string 'name'")
    args = raw.get("args") or {}
    if not isinstance(args, dict):
        raise InputError(f"{where} ({name}): 'args' must be an object")
    match = _NAME.match(name)
    kind = args.get("kind", match.group(2) if match else None)
    if kind not in ALL_KINDS:
        raise InputError(f"{where} ({name}): unknown action kind {kind!r}")
    stage = args.get("stage", int(match.group(1)) if match else -1)
    microbatch = args.get("microbatch", int(match.group(3)) if match and match.group(3) else None)
    step = args.get("step", 0)
    pid = raw.get("pid")
    for label, value in (("pid", pid), ("args.step", step), ("args.stage", stage)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{where} ({name}): {label} must be an integer, got {value!r}")
    if microbatch is not None and (isinstance(microbatch, bool) or not isinstance(microbatch, int)):
        raise InputError(f"{where} ({name}): args.microbatch must be an integer or null")
    start = _number(raw.get("ts"), "ts", f"{where} ({name})")
    dur = _number(raw.get("dur"), "dur", f"{where} ({name})")
    if dur < 0:
        raise InputError(f"{where} ({name}): negative dur {dur}")
    exposed = _number(args.get("exposed_comm_us", 0.0), "args.exposed_comm_us", f"{where} ({name})")
    return Event(name, pid, start, dur, kind, stage, microbatch, step, max(0.0, exposed))


@dataclass(frozen=True)
class Trace:
    events: list       # the X events, sorted by (step, rank, start)
    named_ranks: int   # ranks named by "process_name" metadata (0 when there is none)


def load_trace(path):
    """The X events of a trace file, sorted by (step, rank, start), and the number of ranks its
    metadata names. Raises InputError."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    raw = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(raw, list):
        raise InputError(f"{path}: expected {{\"traceEvents\": [...]}}")
    # "inner_comm" events (communication drawn inside a compute action) are not actions.
    events = [_event(e, i, path) for i, e in enumerate(raw)
              if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") != "inner_comm"]
    if not events:
        raise InputError(f"{path}: no 'X' (action) events")
    events.sort(key=lambda e: (e.step, e.rank, e.start))
    named = {e.get("pid") for e in raw if isinstance(e, dict) and e.get("ph") == "M"
             and e.get("name") == "process_name" and isinstance(e.get("pid"), int)}
    return Trace(events, len(named))


def steps(events):
    by_step = {}
    for e in events:
        by_step.setdefault(e.step, []).append(e)
    return dict(sorted(by_step.items()))


def step_span_us(events):
    return min(e.start for e in events), max(e.end for e in events)


def select_step(events, step, path="trace"):
    chosen = [e for e in events if e.step == step]
    if not chosen:
        have = sorted({e.step for e in events})
        span = f"{have[0]}..{have[-1]}" if len(have) > 1 else str(have[0])
        raise InputError(f"{path}: no step {step} (steps present: {span})")
    return chosen


def median_step(events, skip_first=True):
    """The step whose duration is the (lower) median, among steps >= 1 when skip_first and
    there is more than one step."""
    by_step = steps(events)
    candidates = {s: ev for s, ev in by_step.items() if not (skip_first and s < 1)} or by_step
    durations = sorted((step_span_us(ev)[1] - step_span_us(ev)[0], s) for s, ev in candidates.items())
    return durations[(len(durations) - 1) // 2][1]


def normalise(events, scale=1e-3):
    """Copies of one step's events shifted so the step starts at 0, times scaled (us -> ms)."""
    t0 = step_span_us(events)[0]
    return [replace(e, start=(e.start - t0) * scale, dur=e.dur * scale, exposed=e.exposed * scale)
            for e in events]


def step_stats(events):
    """Per-step accounting as trace/timeline.cpp does it, over the ranks present in `events`:
    step = last end - first start; busy = compute durations (F, B, I, W, OPTIM); comm = exposed
    communication; idle = max(0, step - busy - comm); bubble = mean over ranks of idle / step.
    busy, comm and idle are {rank: time}."""
    ranks = sorted({e.rank for e in events})
    first, last = step_span_us(events)
    step = last - first
    busy, comm = dict.fromkeys(ranks, 0.0), dict.fromkeys(ranks, 0.0)
    for e in events:
        if e.is_compute:
            busy[e.rank] += e.dur
        else:
            comm[e.rank] += e.exposed
    idle = {r: max(0.0, step - busy[r] - comm[r]) for r in ranks}
    bubble = sum(i / step for i in idle.values()) / len(ranks) if step > 0 else 0.0
    return {"step": step, "busy": busy, "comm": comm, "idle": idle, "bubble": bubble}


def read_csv(path, required, optional=()):
    """Columns of a CSV with a header row, as lists of stripped strings. Raises InputError when
    the file is missing, has no rows, or lacks a required column."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: cannot read CSV: {e}") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise InputError(f"{path}: empty file (expected a header with {', '.join(required)})")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)} "
                         f"(header is: {','.join(header)})")
    if len(rows) < 2:
        raise InputError(f"{path}: no data rows")
    columns = {}
    for name in list(required) + [c for c in optional if c in header]:
        i = header.index(name)
        columns[name] = [(r[i].strip() if i < len(r) else "") for r in rows[1:]]
    return columns


def parse_floats(path, column, values, allow_empty=False):
    """Floats of one CSV column; empty cells become NaN when allow_empty."""
    out = []
    for line, text in enumerate(values, start=2):
        if text == "" and allow_empty:
            out.append(float("nan"))
            continue
        try:
            out.append(float(text))
        except ValueError:
            raise InputError(f"{path}:{line}: column {column}: not a number: {text!r}") from None
    return out


def run_main(main):
    """Run main(); InputError -> 'error: ...' on stderr and exit 2; Ctrl-C -> exit 130."""
    try:
        sys.exit(main())
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


def import_pyplot():
    """matplotlib.pyplot on the headless Agg backend, or InputError naming the interpreter."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(f"{sys.executable}: matplotlib is not installed for this interpreter; "
                         "run it with the project's .venv/bin/python (scripts/install-deps.sh)") from None
    return plt


def save_figure(fig, path, dpi=120, verbose=False):
    """Save the figure as PNG at `path` (creating folders); say so when verbose."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fig.savefig(path, dpi=dpi)
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e}") from None
    if verbose:
        print(f"wrote {path}")
