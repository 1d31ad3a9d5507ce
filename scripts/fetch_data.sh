#!/usr/bin/env bash
# Writes the training corpus, the King James Bible (public domain, 31,102 verses), as plain text
# to DATA_DIR/corpus.txt: one verse per line, in canonical order from Genesis 1:1 to Revelation
# 22:21, without book, chapter or verse numbers, single spaces, no trailing spaces.
# The text comes from Debian's bible-kjv-text package (version 4.38), read by its `bible`
# program (package bible-kjv); scripts/install-deps.sh installs both.
# Idempotent: does nothing when DATA_DIR/corpus.txt exists.
# Usage: scripts/fetch_data.sh [DATA_DIR]   (default: data/ at the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

# The cleaned text of bible-kjv-text 4.38; another version of the package fails here rather
# than silently changing the corpus (and every figure measured on it).
SHA256="376f0fd8429cec6cc77659d428b2debd01f069dbfb3917776a09a36a7cfed5c4"
VERSES=31102

data_dir="${1:-data}"
out="$data_dir/corpus.txt"
if [ -s "$out" ]; then
  echo "fetch_data: $out exists; nothing to do"
  exit 0
fi

die() {
  echo "fetch_data: error: $*" >&2
  exit 1
}

command -v bible >/dev/null 2>&1 ||
  die "the 'bible' program (Debian package bible-kjv) is missing: run scripts/install-deps.sh"
mkdir -p "$data_dir"
partial="$(mktemp "$data_dir/.corpus.txt.XXXXXX")"
trap 'rm -f "$partial"' EXIT

# `bible -l N` prints each chapter as a heading line ("Genesis 1", "1 Kings 3") followed by one
# line per verse, "  <verse number> <text>", wrapped at N columns: a wide N keeps a verse on one
# line. Headings start without a space, verses with one, which is what tells them apart.
bible -l 100000 "Gen1:1-Rev22:21" |
  LC_ALL=C sed -n '/^ \{1,\}[0-9]\{1,\} /{s/^ *[0-9]* //;s/  */ /g;s/ *$//;p}' >"$partial"

lines=$(wc -l <"$partial")
[ "$lines" -eq "$VERSES" ] || die "expected $VERSES verses from 'bible', got $lines"
echo "$SHA256  $partial" | sha256sum --check --quiet - ||
  die "the corpus text differs from bible-kjv-text 4.38's (SHA-256 $SHA256)"
chmod 644 "$partial"
mv -f "$partial" "$out"
trap - EXIT
echo "fetch_data: wrote $out: $lines lines, $(wc -w <"$out") words, $(wc -c <"$out") bytes"
