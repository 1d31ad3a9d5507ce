#!/usr/bin/env python3
"""Enforces dtwin's dependency rule on every #include of its C++ sources.

Layers, lowest first (docs/architecture.md); a folder may include itself and the folders listed
for it, nothing above:

    base/            nothing (no LibTorch, no SimGrid)
    schedules/       base
    models/spec/     base, schedules
    models/cost/     base, schedules, models/spec
    models/nn/       base, schedules, models/spec, LibTorch
    trace/           base, schedules, models/spec, models/cost
    sim/             ... trace, SimGrid (never LibTorch)
    plan/            ... sim (never LibTorch)
    runtime/         base, schedules, models/*, trace, LibTorch (never SimGrid; runtime/data/ and
                     runtime/cuda/ belong to it)
    runtime/calibrate/  ... runtime
    cli/, tests/, bench/  anything

Also: no include circle between modules (a module is a header and its source, foo.hpp + foo.cpp),
which would make two files each other's dependency.

Usage: check_layering.py ROOT     exit 0 when the tree keeps the rule, 1 listing each violation
       check_layering.py --self-test   checks that a tree with an upward include and a circle fails
"""

import os
import re
import sys
import tempfile

TORCH = ("torch/", "ATen/", "c10/", "c10d/")
SIMGRID = ("simgrid", "xbt/")

# folder -> (project folders it may include, whether LibTorch, whether SimGrid)
BELOW = {
    "base": ([], False, False),
    "schedules": (["base"], False, False),
    "models/spec": (["base", "schedules"], False, False),
    "models/cost": (["base", "schedules", "models/spec"], False, False),
    "models/nn": (["base", "schedules", "models/spec"], True, False),
    "trace": (["base", "schedules", "models/spec", "models/cost"], False, False),
    "sim": (["base", "schedules", "models/spec", "models/cost", "trace"], False, True),
    "plan": (["base", "schedules", "models/spec", "models/cost", "trace", "sim"], False, True),
    "runtime": (["base", "schedules", "models/spec", "models/cost", "models/nn", "trace"], True,
                False),
    "runtime/calibrate": (["base", "schedules", "models/spec", "models/cost", "models/nn", "trace",
                           "runtime"], True, False),
}
PROJECT = ("base/", "schedules/", "models/", "trace/", "sim/", "plan/", "runtime/", "cli/")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def layer_of(path):
    """The layer (a key of BELOW) of a repository-relative path, or None for cli/tests/bench."""
    best = None
    for layer in BELOW:
        if path.startswith(layer + "/") and (best is None or len(layer) > len(best)):
            best = layer
    return best


def sources(root):
    for folder in ("base", "schedules", "models", "trace", "sim", "plan", "runtime", "cli"):
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if name.endswith((".hpp", ".cpp")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def includes(root, path):
    """[(line number, included path)] of a file."""
    found = []
    with open(os.path.join(root, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            match = INCLUDE.match(line)
            if match:
                found.append((number, match.group(1)))
    return found


def allowed(layer, included):
    """None when `layer` may include `included`, else why not."""
    below, torch_ok, simgrid_ok = BELOW[layer]
    if included.startswith(PROJECT):
        target = layer_of(included)
        if target is None:  # cli/
            return f"{layer}/ may not include cli/"
        if target == layer or target in below:
            return None
        return f"{layer}/ may include only {', '.join(below) or 'nothing of the project'}"
    if included.startswith(TORCH) and not torch_ok:
        return f"{layer}/ may not include LibTorch"
    if included.startswith(SIMGRID) and not simgrid_ok:
        return f"{layer}/ may not include SimGrid"
    return None


def module(path):
    return os.path.splitext(path)[0]


def find_circles(graph):
    """Each include circle of the module graph once, as a list of modules."""
    circles, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                circle = stack[stack.index(nxt):]
                if sorted(circle) not in [sorted(c) for c in circles]:
                    circles.append(circle)
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return circles


def check(root):
    """The violations of the tree at `root`, one message each."""
    problems, graph = [], {}
    for path in sources(root):
        layer = layer_of(path)
        for number, included in includes(root, path):
            if layer is not None:
                why = allowed(layer, included)
                if why:
                    problems.append(f"{path}:{number}: #include \"{included}\": {why}")
            if included.startswith(PROJECT) and module(included) != module(path):
                graph.setdefault(module(path), set()).add(module(included))
    for circle in find_circles(graph):
        problems.append("include circle: " + " -> ".join(circle + [circle[0]]))
    return problems


def self_test():
    """A tree with one upward include and one circle must give exactly those two violations."""
    files = {
        "schedules/a.hpp": '#include "models/spec/s.hpp"\n',
        "models/spec/s.hpp": '#include "base/e.hpp"\n',
        "base/e.hpp": "",
        "runtime/x.hpp": "",
        "runtime/x.cpp": '#include "runtime/x.hpp"\n#include "runtime/cuda/y.hpp"\n',
        "runtime/cuda/y.hpp": '#include "runtime/x.hpp"\n',
    }
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        problems = check(root)
    upward = [p for p in problems if p.startswith("schedules/a.hpp:1:")]
    circles = [p for p in problems if p.startswith("include circle: ")]
    if len(upward) != 1 or len(circles) != 1 or len(problems) != 2:
        print("self-test failed: expected one upward include and one circle, got:")
        print("\n".join(problems) or "(nothing)")
        return 1
    print("self-test ok:\n" + "\n".join(problems))
    return 0


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--self-test":
        sys.exit(self_test())
    problems = check(sys.argv[1])
    print("\n".join(problems) if problems else "layering ok")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
