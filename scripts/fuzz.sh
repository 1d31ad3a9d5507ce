#!/usr/bin/env bash
# Builds the libFuzzer targets of the input readers (tests/fuzz/) with clang, ASan and UBSan into
# build-fuzz/ and runs each for SECONDS (default 60), one per core at a time, seeded with
# scenarios/, the bad-input corpus, the golden files and earlier findings
# (tests/fuzz/corpus/TARGET/). A crash, a leak, a timeout (10 s on one input) or an escaped
# exception stops it with exit 1 and leaves the input under build-fuzz/findings/; libFuzzer's
# last stats line (executions, coverage) is printed per target.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
# shellcheck disable=SC2207
[ ${#targets[@]} -gt 0 ] ||
  targets=($(sed -n 's/^set(DTWIN_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/targets.cmake))
cmake -S . -B build-fuzz -DDTWIN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]}"

# fuzz_schedule_text's seeds: each golden schedule (tests/golden/SCHEDULE_ppP_mM.txt) behind the
# two bytes that choose its layout (see tests/fuzz/fuzz_schedule_text.cpp).
schedule_seeds=build-fuzz/seeds/fuzz_schedule_text
mkdir -p "$schedule_seeds"
for golden in tests/golden/*_pp*_m*.txt; do
  [[ "$(basename "$golden")" =~ ^(.*)_pp([0-9]+)_m([0-9]+)\.txt$ ]]
  v=1
  case "${BASH_REMATCH[1]}" in interleaved-1f1b | zb-v | dualpipe-v) v=2 ;; esac
  layout=$(((BASH_REMATCH[2] - 1) << 2 | (v - 1) << 4))
  { printf "$(printf '\\x%02x\\x%02x' "$layout" "$((BASH_REMATCH[3] - 1))")"; cat "$golden"; } \
    >"$schedule_seeds/$(basename "$golden")"
done

seeds_of() {
  case "$1" in
    fuzz_scenario) echo scenarios tests/scenarios/bad validation ;;
    fuzz_profile) echo tests/golden ;;
    fuzz_trace) echo tests/golden ;;
    fuzz_schedule_text) echo "$schedule_seeds" ;;
  esac
}
mkdir -p build-fuzz/findings
# Runs one target for $seconds; its libFuzzer output goes to build-fuzz/TARGET.log.
fuzz() {
  local work="build-fuzz/corpus/$1"
  mkdir -p "$work" "tests/fuzz/corpus/$1"
  # shellcheck disable=SC2046
  build-fuzz/tests/fuzz/"$1" "$work" "tests/fuzz/corpus/$1" $(seeds_of "$1") \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/findings/$1-" >"build-fuzz/$1.log" 2>&1
}
# One target per core at a time: each still gets $seconds of one core.
declare -A pid_of
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  fuzz "$target" &
  pid_of[$target]=$!
done
status=0
for target in "${targets[@]}"; do
  if ! wait "${pid_of[$target]}"; then
    echo "$target: FAILED (build-fuzz/$target.log, input under build-fuzz/findings/)"
    tail -30 "build-fuzz/$target.log"
    status=1
  fi
  grep -E "^#[0-9]+.*(DONE|cov:)" "build-fuzz/$target.log" | tail -1 | sed "s/^/$target: /"
done
exit "$status"
