#!/usr/bin/env bash
# README's test command: installs the dependencies, builds both configurations and runs every
# test through CTest on the CPU.
#   build/      the default configuration: with a CUDA LibTorch (the PyPI wheel) the CUDA code
#               paths are compiled in (DTWIN_HAVE_CUDA=1); every test runs here, on the CPU.
#   build-cpu/  the CPU-only configuration (-DDTWIN_CUDA=OFF): dtwin compiled and linked, so that
#               both sides of the switch build on every change.
#   build-fuzz/ the input readers' libFuzzer targets (clang, ASan, UBSan), each run for
#               DTWIN_FUZZ_SECONDS (default 60) by scripts/fuzz.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/fetch_data.sh
bash scripts/build.sh
BUILD_DIR=build-cpu bash scripts/build.sh -DDTWIN_CUDA=OFF --target dtwin
ctest --test-dir build --output-on-failure -j "$(nproc)"
bash scripts/fuzz.sh "${DTWIN_FUZZ_SECONDS:-60}"
