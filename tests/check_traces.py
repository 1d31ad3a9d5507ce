#!/usr/bin/env python3
"""Checks that dtwin's Chrome traces are whole in Perfetto: every slice on its track, every flow
bound, every rank's memory counter present.

Perfetto reads a trace's times as whole nanoseconds (llround(ts * 1000)) and keeps, on each track
(pid, tid), only slices that nest: any two either disjoint or one inside the other. It binds a
flow's "s" to the slice enclosing its time on its track, and an "f" with "bp": "e" likewise, and
drops a flow whose "f" comes before its "s". A trace passes when:

- every track's "X" slices nest;
- every thread with slices is named (thread_name), and tid 0 holds compute (F, B, I, W, OPTIM)
  only;
- every flow id has one "s" and one "f" ("bp": "e"), the "s" strictly inside a SEND's slice on
  its track, the "f" later and strictly inside a RECV's, and every SEND has a flow;
- every rank with slices has a "memory" counter ("ph": "C", args {"bytes"}) whose samples are
  positive; its largest sample is the rank's peak_memory_bytes of the summary beside the trace
  (predicted.summary.json) or at most it (measured.summary.json, whose peak counts every
  tensor-parallel member and every moment).

Usage:
  check_traces.py predicted ROOT DTWIN   simulate every ROOT/scenarios/*.yaml (at least 15; exit
                                         0, or 3 saying the layout does not fit) and check each
                                         predicted.trace.json
  check_traces.py measured ROOT DTWIN    train each CPU scenario (cluster.device.kind: cpu) for 2
                                         steps of a small model (needs ROOT/data, fetch_data.sh)
                                         and check each measured.trace.json
  check_traces.py files TRACE...         check trace files (a summary beside each is used if any)
  check_traces.py --self-test            checks that overlapping slices, a lone flow end and a
                                         missing counter fail
Exit 0 when every trace passes, 1 listing the failures (at most 5 per trace and rule).
"""

import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

COMPUTE_KINDS = {"F", "B", "I", "W", "OPTIM"}
# tests/test_train.cpp's kSmallModel, for 2 steps.
SMALL_MODEL = ["--set", "model.d_model=64", "--set", "model.n_heads=4", "--set",
               "model.ffn_hidden=128", "--set", "model.seq_len=64", "--set", "training.steps=2",
               "--set", "training.precision=fp32"]
# An encoder keeps its classification set's sequence length and drops its warm-up.
SMALL_ENCODER = SMALL_MODEL[:6] + ["--set", "training.steps=2", "--set", "training.warmup_steps=0"]
SHOWN = 5  # failures listed per trace and rule


def ns(us):
    """A trace time in microseconds as Perfetto's whole nanoseconds."""
    return int(round(us * 1000))


class Report:
    """Failures of one trace, at most SHOWN per rule, with the count of the rest."""

    def __init__(self, path):
        self.path, self.failures, self.counts = path, [], defaultdict(int)

    def fail(self, rule, message):
        self.counts[rule] += 1
        if self.counts[rule] <= SHOWN:
            self.failures.append(f"{self.path}: {rule}: {message}")

    def lines(self):
        more = [f"{self.path}: {rule}: {n - SHOWN} more" for rule, n in self.counts.items()
                if n > SHOWN]
        return self.failures + more


def slices_by_track(events):
    """{(pid, tid): [(start_ns, end_ns, event), ...]} of the "X" events."""
    tracks = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            start = ns(e["ts"])
            tracks[(e["pid"], e["tid"])].append((start, start + ns(e["dur"]), e))
    return tracks


def check_nesting(tracks, report):
    for track, slices in tracks.items():
        open_slices = []
        for start, end, e in sorted(slices, key=lambda s: (s[0], -s[1])):
            while open_slices and open_slices[-1][1] <= start:
                open_slices.pop()
            if open_slices and open_slices[-1][1] < end:
                outer = open_slices[-1]
                report.fail("nesting", f"pid {track[0]} tid {track[1]}: {e['name']} "
                            f"[{start}, {end}] ns overlaps {outer[2]['name']} "
                            f"[{outer[0]}, {outer[1]}] ns without nesting")
            open_slices.append((start, end, e))


def check_threads(events, tracks, report):
    named = {(e.get("pid"), e.get("tid")) for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for track, slices in tracks.items():
        if track not in named:
            report.fail("thread names", f"pid {track[0]} tid {track[1]} has no thread_name")
        if track[1] == 0:
            for _, _, e in slices:
                kind = e.get("args", {}).get("kind")
                if kind not in COMPUTE_KINDS:
                    report.fail("compute track", f"pid {track[0]}: {e['name']} on tid 0")


def enclosing(tracks, pid, tid, at):
    """The slices of track (pid, tid) that hold time `at` (ns) strictly inside."""
    return [e for start, end, e in tracks.get((pid, tid), ()) if start < at < end]


def check_flows(events, tracks, report):
    ends = defaultdict(dict)  # (cat, id) -> {"s": event, "f": event}
    for e in events:
        if e.get("ph") in ("s", "f"):
            key = (e.get("cat"), e.get("id"))
            if e["ph"] in ends[key]:
                report.fail("flows", f"flow {key} has two '{e['ph']}' events")
            ends[key][e["ph"]] = e
    linked = set()
    for key, pair in ends.items():
        if set(pair) != {"s", "f"}:
            report.fail("flows", f"flow {key} has only its '{next(iter(pair))}' event")
            continue
        start, finish = pair["s"], pair["f"]
        if finish.get("bp") != "e":
            report.fail("flows", f"flow {key}: its 'f' lacks \"bp\": \"e\"")
        if ns(start["ts"]) >= ns(finish["ts"]):
            report.fail("flows", f"flow {key}: its 'f' is not after its 's'")
        for end, kinds in ((start, ("SEND_F", "SEND_B")), (finish, ("RECV_F", "RECV_B"))):
            bound = [e for e in enclosing(tracks, end["pid"], end["tid"], ns(end["ts"]))
                     if e.get("args", {}).get("kind") in kinds]
            if not bound:
                report.fail("flows", f"flow {key}: its '{end['ph']}' at {end['ts']} us lies in no "
                            f"{'/'.join(kinds)} slice of pid {end['pid']} tid {end['tid']}")
            elif end is start:
                linked.add(id(bound[0]))
    for slices in tracks.values():
        for _, _, e in slices:
            if e.get("args", {}).get("kind") in ("SEND_F", "SEND_B") and id(e) not in linked:
                report.fail("flows", f"pid {e['pid']}: {e['name']} step "
                            f"{e['args'].get('step')} starts no flow")


def check_memory(events, tracks, summary, measured, report):
    peaks = defaultdict(float)  # pid -> largest sample
    for e in events:
        if e.get("ph") != "C" or e.get("name") != "memory":
            continue
        value = e.get("args", {}).get("bytes")
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            report.fail("memory", f"pid {e.get('pid')}: sample {value!r} at {e.get('ts')} us")
            continue
        peaks[e["pid"]] = max(peaks[e["pid"]], value)
    for pid in sorted({track[0] for track in tracks}):
        if pid not in peaks:
            report.fail("memory", f"pid {pid} has slices but no memory counter")
        elif summary is not None:
            peak = summary["ranks"][pid]["peak_memory_bytes"]
            fits = peaks[pid] <= peak * (1 + 1e-9) if measured else \
                math.isclose(peaks[pid], peak, rel_tol=1e-9)
            if not fits:
                report.fail("memory", f"pid {pid}: largest sample {peaks[pid]:.0f} B against the "
                            f"summary's peak_memory_bytes {peak:.0f} B")


def check_trace(path):
    """Failure lines of one trace file (empty when it passes)."""
    report = Report(path)
    try:
        with open(path, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return [f"{path}: cannot read a trace: {e}"]
    measured = os.path.basename(path).startswith("measured")
    summary_path = re.sub(r"trace\.json$", "summary.json", path)
    summary = None
    if summary_path != path and os.path.isfile(summary_path):
        with open(summary_path, encoding="utf-8") as f:
            summary = json.load(f)
    tracks = slices_by_track(events)
    if not tracks:
        report.fail("slices", "no X events")
    check_nesting(tracks, report)
    check_threads(events, tracks, report)
    check_flows(events, tracks, report)
    check_memory(events, tracks, summary, measured, report)
    return report.lines()


def run(command, what, does_not_fit_ok=False):
    """Runs `command`; a failure line naming `what` when it exits non-zero, else None. With
    `does_not_fit_ok`, exit 3 saying "the layout does not fit" (dtwin simulate, prediction
    written) is no failure."""
    result = subprocess.run(command, capture_output=True, text=True)
    fits_not = result.returncode == 3 and "the layout does not fit" in result.stderr
    if result.returncode != 0 and not (does_not_fit_ok and fits_not):
        return f"{what}: {' '.join(command)} exited {result.returncode}:\n{result.stdout[-2000:]}" \
               f"{result.stderr[-2000:]}"
    return None


def scenarios(root, cpu_only):
    names = sorted(n for n in os.listdir(os.path.join(root, "scenarios")) if n.endswith(".yaml"))
    paths = [os.path.join(root, "scenarios", n) for n in names]
    if cpu_only:
        paths = [p for p in paths
                 if re.search(r"^\s*kind:\s*cpu\b", open(p, encoding="utf-8").read(), re.M)]
    return paths


def check_scenarios(root, dtwin, measured):
    """Failure lines over the shipped scenarios' predicted or measured traces."""
    failures = []
    shipped = scenarios(root, measured)
    if not measured and len(shipped) < 15:
        failures.append(f"{root}/scenarios: {len(shipped)} scenarios, expected at least 15")
    with tempfile.TemporaryDirectory() as scratch:
        for scenario in shipped:
            name = os.path.basename(scenario)[:-len(".yaml")]
            out = os.path.join(scratch, name)
            if measured:
                text = open(scenario, encoding="utf-8").read()
                encoder = re.search(r"^\s*family:\s*(bert|distilbert)\b", text, re.M)
                dataset = re.search(r"^\s*dataset:\s*(\S+)", text, re.M)
                if encoder and dataset and not os.path.isdir(
                        os.path.join(root, "data", dataset.group(1))):
                    print(f"{name}: skipped (its data set data/{dataset.group(1)} is the user's)")
                    continue
                command = [dtwin, "train", scenario, "-o", out, "--data-dir",
                           os.path.join(root, "data")] + (SMALL_ENCODER if encoder else SMALL_MODEL)
            else:
                command = [dtwin, "simulate", scenario, "-o", out]
            error = run(command, name, does_not_fit_ok=not measured)
            trace = os.path.join(out, ("measured" if measured else "predicted") + ".trace.json")
            found = [error] if error else check_trace(trace)
            print(f"{name}: {'ok' if not found else f'{len(found)} failure(s)'}")
            failures += found
    return failures


def self_test():
    """Failure lines when a broken trace passes or a whole one fails."""
    def x(name, kind, tid, ts, dur, step=0):
        return {"name": name, "ph": "X", "pid": 0, "tid": tid, "ts": ts, "dur": dur,
                "args": {"kind": kind, "step": step}}

    meta = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": t, "args": {"name": str(t)}}
            for t in (0, 1, 2)]
    whole = meta + [
        x("0F0", "F", 0, 0.0, 10.0), x("0SEND_F0", "SEND_F", 1, 10.0, 5.0),
        x("0RECV_F0", "RECV_F", 2, 8.0, 8.0),
        {"name": "0SEND_F0", "cat": "transfer", "ph": "s", "id": 1, "pid": 0, "tid": 1, "ts": 12},
        {"name": "0SEND_F0", "cat": "transfer", "ph": "f", "bp": "e", "id": 1, "pid": 0, "tid": 2,
         "ts": 13},
        {"name": "memory", "ph": "C", "pid": 0, "ts": 10.0, "args": {"bytes": 100}}]
    broken = [dict(e) for e in whole[:-1] if e.get("ph") != "f"]
    broken.append(x("0SEND_F1", "SEND_F", 1, 12.0, 5.0))  # overlaps 0SEND_F0 on tid 1
    problems = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, events, expected in (("whole", whole, set()),
                                       ("broken", broken, {"nesting", "flows", "memory"})):
            path = os.path.join(scratch, f"{name}.trace.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"traceEvents": events}, f)
            rules = {line.split(": ")[1] for line in check_trace(path)}
            if rules != expected:
                problems.append(f"self-test: the {name} trace broke {sorted(rules)}, "
                                f"expected {sorted(expected)}")
    return problems


def main(argv):
    if argv[1:] == ["--self-test"]:
        failures = self_test()
    elif len(argv) >= 3 and argv[1] == "files":
        failures = [line for path in argv[2:] for line in check_trace(path)]
    elif len(argv) == 4 and argv[1] in ("predicted", "measured"):
        failures = check_scenarios(argv[2], argv[3], argv[1] == "measured")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for line in failures:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
