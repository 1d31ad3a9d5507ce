#!/usr/bin/env bash
# README's test command: installs the dependencies, builds the sanitizer configurations and runs
# every test through CTest on the CPU.
#   build-asan/ ASan and UBSan (every UB check fatal), with a CUDA LibTorch (the PyPI wheel) the
#               CUDA code paths compiled in (DTWIN_HAVE_CUDA=1); every test runs here, on the CPU.
#   build-tsan/ TSan, CPU-only (-DDTWIN_CUDA=OFF, so both sides of the switch build on every
#               change): dtwin and the tests tagged [threads], those that run the runtime's
#               threads; the first race report stops the process (halt_on_error) and fails its test
#               (suppressions: tests/sanitizers/tsan.supp).
#   build-fuzz/ the input readers' libFuzzer targets (clang, ASan, UBSan), each run for
#               DTWIN_FUZZ_SECONDS (default 30) by scripts/fuzz.sh.
# LibTorch, SimGrid and Catch2's runner stay uninstrumented. README's main command builds the
# plain build/.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's end with the seconds since the start, where the 30-minute budget goes.
stage() { echo "== test.sh: $1 done at ${SECONDS} s"; }
bash scripts/install-deps.sh
bash scripts/fetch_data.sh
stage "install"
BUILD_DIR=build-asan bash scripts/build.sh -DDTWIN_SANITIZE=address,undefined
stage "ASan build"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
stage "ASan tests"
BUILD_DIR=build-tsan bash scripts/build.sh -DDTWIN_CUDA=OFF -DDTWIN_SANITIZE=thread \
  --target dtwin --target dtwin_train_tests --target dtwin_cli_tests
stage "TSan build"
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/sanitizers/tsan.supp ${TSAN_OPTIONS:-}" \
  ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" -L threads
stage "TSan tests"
bash scripts/fuzz.sh "${DTWIN_FUZZ_SECONDS:-30}"
stage "fuzzing"
