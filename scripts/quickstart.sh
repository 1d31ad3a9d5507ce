#!/usr/bin/env bash
# README's main command: installs the dependencies, builds, prints the quickstart schedule and
# runs the main job on it: profile, simulate, train, compare and plot (out/quickstart/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/fetch_data.sh
bash scripts/build.sh
build/cli/dtwin schedule scenarios/quickstart.yaml --dry-run
build/cli/dtwin run scenarios/quickstart.yaml
