#!/usr/bin/env bash
# Installs everything dtwin needs to build, test and run, on Debian 12:
#   - Debian's packages (compilers, Ninja, clang's libFuzzer and sanitizer runtimes, SimGrid, yaml-cpp, fmt, Catch2, CLI11, nlohmann-json,
#     SentencePiece, toml++, zlib, the King James Bible text for the corpus, iproute2);
#   - the project's virtual environment .venv/ with the pinned PyPI packages of
#     scripts/requirements.txt: PyTorch (whose LibTorch, with CUDA, CMake builds against),
#     matplotlib and numpy for plots/ and bench/.
# Idempotent and quick when everything is present: apt runs only when a package is missing, pip
# only when scripts/requirements.txt changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

packages=(g++ cmake make ninja-build pkg-config clang-format ccache clang libclang-rt-14-dev
  libsimgrid-dev libyaml-cpp-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev
  libsentencepiece-dev libgloo-dev zlib1g-dev libtomlplusplus-dev bible-kjv bible-kjv-text iproute2 python3 python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

requirements=scripts/requirements.txt
stamp=.venv/.requirements.sha256
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "install-deps: installing $requirements into .venv/"
  [ -x .venv/bin/python ] || /usr/bin/python3 -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-input -r "$requirements"
  echo "$want" >"$stamp"
fi
echo "install-deps: $(.venv/bin/python -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)')"
