"""Keeps the documentation current: runs every documented command and compares its output, and
checks that every relative link points at something that exists.

**Command outputs.** README.md and every docs/*.md beside it mark each checked output with an
HTML comment right before its fenced block:

    <!-- output of: dtwin schedule scenarios/quickstart.yaml --dry-run -->
    ```
    rank 0: 0F0 ...
    ```

The command runs with the given dtwin executable, in a scratch folder that links the
repository's `scenarios/`, `tests/`, `validation/` and `models/` (so relative paths in the docs
work and outputs land in the scratch folder). A block line that starts with "$ " is the command as
a user types it and is not compared. Every other line of the block must appear in the command's
stdout + stderr, in the same order and on consecutive lines: the documented text is the part that
does not vary between runs (simulations and schedules are deterministic; training output is not
checked). README.md must hold at least one checked block; a docs/ page may hold none.

**Links.** Every relative Markdown link and image, inline (`[text](path)`, `![alt](path)`) or
by reference (`[id]: path`), in README.md, docs/*.md and bench/results/*.md must name an existing
file or folder, relative to the page. A link with `#anchor` into a Markdown file (or `#anchor`
alone, into the page itself) must name one of its headings, by GitHub's rule: the heading's text
without Markdown markup, lower-cased, every character but letters, digits, `_`, `-` and spaces
dropped, spaces turned into `-`, and `-1`, `-2`, ... added to repeats. Links with a scheme
(`https:`, `mailto:`) are not checked, nor anything inside code blocks or code spans.

Usage: python3 check_readme.py README.md DTWIN_EXECUTABLE
Exit 0 when every block matches and every link resolves; 1 when a block does not match (what the
command printed is shown beside what the page shows), when a link is dead (file:line: the link),
when README has no checked block, or when a marker is malformed.
"""

import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
import urllib.parse

MARKER = re.compile(r"^<!-- output of: (.+) -->$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
ATX_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SETEXT_UNDERLINE = re.compile(r"^\s{0,3}(=+|-+)\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target) or ![alt](target), target optionally in <>, optionally followed by a "title".
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
SCRATCH_FOLDERS = ("scenarios", "tests", "validation", "models")


def prose_lines(path):
    """[(line number, text)] of the lines outside fenced code blocks, code spans blanked."""
    lines = open(path, encoding="utf-8").read().split("\n")
    result, fenced = [], False
    for number, line in enumerate(lines, start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            result.append((number, CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)))
    return result


def heading_text(markdown):
    """A heading's text as GitHub renders it: links become their text, markup goes."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("`", "").replace("*", "")


def slugify(text):
    """GitHub's anchor for a heading's text (without the -N suffix of repeats)."""
    text = heading_text(text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """Every anchor a Markdown file defines: its headings' slugs and <a name/id="..."> tags."""
    if path in cache:
        return cache[path]
    found, seen = set(), {}
    fenced, previous = False, ""
    for line in open(path, encoding="utf-8").read().split("\n"):
        if FENCE.match(line):
            fenced, previous = not fenced, ""
            continue
        if fenced:
            continue
        found.update(HTML_ANCHOR.findall(line))
        heading = None
        match = ATX_HEADING.match(line)
        if match:
            heading = match.group(2)
        elif (SETEXT_UNDERLINE.match(line) and previous.strip()
              and not re.match(r"^\s*([#|>*+-]|\d+\.)", previous)):
            heading = previous
        if heading is not None:
            slug = slugify(heading)
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        previous = line
    cache[path] = found
    return found


def link_targets(path):
    """[(line number, target)] of every link and image in a Markdown file."""
    targets = []
    for number, line in prose_lines(path):
        for match in INLINE_LINK.finditer(line):
            targets.append((number, match.group(1)))
        match = REFERENCE_DEFINITION.match(line)
        if match:
            targets.append((number, match.group(1)))
    return targets


def dead_link(page, target):
    """Why `target`, linked from `page`, does not resolve; None when it does or is not checked."""
    target = target.strip("<>")
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("//"):
        return None  # https:, mailto:, ...: not a file of this repository
    path_part, _, anchor = target.partition("#")
    path_part = urllib.parse.unquote(path_part)
    resolved = os.path.normpath(os.path.join(os.path.dirname(page), path_part)) if path_part else page
    if not os.path.exists(resolved):
        return "no such file or folder"
    if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
        if urllib.parse.unquote(anchor).lower() not in anchors(resolved):
            return f"no heading with the anchor #{anchor} in {os.path.basename(resolved)}"
    return None


def check_links(root, pages):
    """Prints each dead link as file:line and returns how many there were."""
    dead = 0
    for page in pages:
        for line, target in link_targets(page):
            why = dead_link(page, target)
            if why:
                dead += 1
                print(f"{os.path.relpath(page, root)}:{line}: dead link {target}: {why}")
    return dead


def checked_blocks(page, required):
    """[(line number, argv after 'dtwin', [expected lines])] of every marked block."""
    lines = open(page, encoding="utf-8").read().split("\n")
    blocks = []
    for i, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        argv = shlex.split(match.group(1))
        if argv[0] != "dtwin" or i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            sys.exit(f"{page}:{i + 1}: expected 'dtwin ...' and a fenced block after the marker")
        end = i + 2
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        expected = [l for l in lines[i + 2 : end] if not l.startswith("$ ")]
        blocks.append((i + 1, argv[1:], expected))
    if required and not blocks:
        sys.exit(f"{page}: no '<!-- output of: dtwin ... -->' blocks")
    return blocks


def contains_run(output, expected):
    """True when `expected` stands in `output` as consecutive lines."""
    n = len(expected)
    return any(output[i : i + n] == expected for i in range(len(output) - n + 1))


def check_outputs(root, pages, dtwin):
    """Runs every checked block of `pages` (the first is README) and returns how many failed."""
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        for folder in SCRATCH_FOLDERS:
            if os.path.isdir(os.path.join(root, folder)):
                os.symlink(os.path.join(root, folder), os.path.join(scratch, folder))
        for index, page in enumerate(pages):
            name = os.path.relpath(page, root)
            for line, args, expected in checked_blocks(page, required=index == 0):
                run = subprocess.run([dtwin, *args], cwd=scratch, capture_output=True, text=True)
                output = (run.stdout + run.stderr).split("\n")
                if contains_run(output, expected):
                    print(f"{name}:{line}: ok: dtwin {' '.join(args)}")
                    continue
                failures += 1
                print(f"{name}:{line}: dtwin {' '.join(args)} (exit {run.returncode}) printed:")
                print("\n".join("  | " + l for l in output))
                print(f"but {name} shows:")
                print("\n".join("  | " + l for l in expected))
    return failures


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    readme, dtwin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    root = os.path.dirname(readme)
    docs = sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    results = sorted(glob.glob(os.path.join(root, "bench", "results", "*.md")))
    failures = check_outputs(root, [readme, *docs], dtwin)
    dead = check_links(root, [readme, *docs, *results])
    if dead:
        print(f"{dead} dead link(s)")
    sys.exit(1 if failures or dead else 0)


if __name__ == "__main__":
    main()
