#!/usr/bin/env bash
# README's main command: installs the dependencies, builds, and runs the main job on the
# quickstart scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/fetch_data.sh
bash scripts/build.sh
build/cli/dtwin schedule scenarios/quickstart.yaml --dry-run
build/cli/dtwin simulate scenarios/quickstart.yaml
build/cli/dtwin train scenarios/quickstart.yaml
