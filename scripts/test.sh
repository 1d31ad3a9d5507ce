#!/usr/bin/env bash
# README's test command: installs the dependencies, builds, and runs every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/fetch_data.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
