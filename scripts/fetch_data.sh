#!/usr/bin/env bash
# Writes the training corpus, the King James Bible (public domain, 31,102 verses), as plain text
# to DATA_DIR/corpus.txt: one verse per line, in canonical order from Genesis 1:1 to Revelation
# 22:21, without book, chapter or verse numbers, single spaces, no trailing spaces.
# The text comes from Debian's bible-kjv-text package (version 4.38), read by its `bible`
# program (package bible-kjv); scripts/install-deps.sh installs both.
# Then the text-classification task kjv-books (scripts/make_kjv_classification.py: each verse
# labelled by its group of books, GLUE's single-sentence TSV, fixed train/dev splits, a WordPiece
# tokenizer) in DATA_DIR/kjv-books/, tokenized to 128 positions (scripts/tokenize_glue.py) as
# train.safetensors and dev.safetensors; it needs the project's .venv (scripts/install-deps.sh).
# Idempotent: does nothing for a part whose output exists.
# Usage: scripts/fetch_data.sh [DATA_DIR]   (default: data/ at the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

# The cleaned text of bible-kjv-text 4.38; another version of the package fails here rather
# than silently changing the corpus (and every figure measured on it).
SHA256="376f0fd8429cec6cc77659d428b2debd01f069dbfb3917776a09a36a7cfed5c4"
VERSES=31102

data_dir="${1:-data}"
out="$data_dir/corpus.txt"

die() {
  echo "fetch_data: error: $*" >&2
  exit 1
}

# The TSVs of kjv-books as make_kjv_classification.py writes them from bible-kjv-text 4.38.
TRAIN_SHA256="53aef2d96f866dfcf0342a69f8563f154ced24303b98198a60568b8c1d9b2020"
DEV_SHA256="0ab89a4a3e11fc6a62101de1f1a8ff42aa5e874cb940adc2c99a918ca66054d5"

write_kjv_books() {
  local dir="$data_dir/kjv-books" python=.venv/bin/python
  if [ -s "$dir/dev.safetensors" ]; then
    echo "fetch_data: $dir exists; nothing to do"
    return
  fi
  [ -x "$python" ] || die "$python is missing: run scripts/install-deps.sh"
  local partial
  partial="$(mktemp -d "$data_dir/.kjv-books.XXXXXX")"
  "$python" scripts/make_kjv_classification.py "$partial"
  echo "$TRAIN_SHA256  $partial/train.tsv" | sha256sum --check --quiet - ||
    die "kjv-books' train.tsv differs from the one of bible-kjv-text 4.38 (SHA-256 $TRAIN_SHA256)"
  echo "$DEV_SHA256  $partial/dev.tsv" | sha256sum --check --quiet - ||
    die "kjv-books' dev.tsv differs from the one of bible-kjv-text 4.38 (SHA-256 $DEV_SHA256)"
  for split in train dev; do
    "$python" scripts/tokenize_glue.py --task sst2 --tokenizer "$partial/tokenizer" \
      --labels "$partial/labels.txt" --max-len 128 "$partial/$split.tsv" "$partial/$split.safetensors"
  done
  chmod 644 "$partial"/*.safetensors
  chmod 755 "$partial"
  rm -rf "$dir"
  mv "$partial" "$dir"
}

if [ -s "$out" ]; then
  echo "fetch_data: $out exists; nothing to do"
  write_kjv_books
  exit 0
fi

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
write_kjv_books
