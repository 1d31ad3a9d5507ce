#!/usr/bin/env bash
# The ASan+UBSan configuration (build-asan/, -DDTWIN_SANITIZE=address,undefined, CPU-only) of the
# whole build, and the whole test suite run in it. Not part of scripts/test.sh: on the 2-core CI
# machine its uncached build alone takes 23.6 min (README, "Sanitizers").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/fetch_data.sh
BUILD_DIR=build-asan bash scripts/build.sh -DDTWIN_CUDA=OFF -DDTWIN_SANITIZE=address,undefined
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
