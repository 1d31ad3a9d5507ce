"""Keeps README's command outputs current: runs every documented command and compares its output.

README marks each checked output with an HTML comment right before its fenced block:

    <!-- output of: dtwin schedule scenarios/quickstart.yaml --dry-run -->
    ```
    rank 0: 0F0 ...
    ```

The command runs with the given dtwin executable, in a scratch folder that links the
repository's `scenarios/` and `tests/` (so relative paths in README work and outputs land in the
scratch folder). A block line that starts with "$ " is the command as a user types it and is not
compared. Every other line of the block must appear in the command's stdout + stderr, in the
same order and on consecutive lines: the documented text is the part that does not vary between
runs (simulations and schedules are deterministic; training output is not checked).

Usage: python3 check_readme.py README.md DTWIN_EXECUTABLE
Exit 0 when every block matches; 1 when one does not (what the command printed is shown beside
what README shows), when README has no checked block, or when a marker is malformed.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!-- output of: (.+) -->$")


def checked_blocks(readme):
    """[(line number, argv after 'dtwin', [expected lines])] of every marked block."""
    lines = open(readme, encoding="utf-8").read().split("\n")
    blocks = []
    for i, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        argv = shlex.split(match.group(1))
        if argv[0] != "dtwin" or i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            sys.exit(f"{readme}:{i + 1}: expected 'dtwin ...' and a fenced block after the marker")
        end = i + 2
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        expected = [l for l in lines[i + 2 : end] if not l.startswith("$ ")]
        blocks.append((i + 1, argv[1:], expected))
    if not blocks:
        sys.exit(f"{readme}: no '<!-- output of: dtwin ... -->' blocks")
    return blocks


def contains_run(output, expected):
    """True when `expected` stands in `output` as consecutive lines."""
    n = len(expected)
    return any(output[i : i + n] == expected for i in range(len(output) - n + 1))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    readme, dtwin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    root = os.path.dirname(readme)
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        for folder in ("scenarios", "tests"):
            os.symlink(os.path.join(root, folder), os.path.join(scratch, folder))
        for line, args, expected in checked_blocks(readme):
            run = subprocess.run([dtwin, *args], cwd=scratch, capture_output=True, text=True)
            output = (run.stdout + run.stderr).split("\n")
            if contains_run(output, expected):
                print(f"README.md:{line}: ok: dtwin {' '.join(args)}")
                continue
            failures += 1
            print(f"README.md:{line}: dtwin {' '.join(args)} (exit {run.returncode}) printed:")
            print("\n".join("  | " + l for l in output))
            print("but README shows:")
            print("\n".join("  | " + l for l in expected))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
