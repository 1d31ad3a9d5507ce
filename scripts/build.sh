#!/usr/bin/env bash
# Configures and builds dtwin (Release) into $BUILD_DIR (default build/).
# Usage: [BUILD_DIR=dir] scripts/build.sh [cmake configure args] [--target T ...]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
configure=() targets=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--target" ]; then
    targets+=(--target "$2")
    shift 2
  else
    configure+=("$1")
    shift
  fi
done
# ccache, when installed, lets a configuration reuse every object whose flags and preprocessed
# source it shares with another: paths are hashed relative to the repository, so every build
# folder of every clone shares one cache.
if command -v ccache >/dev/null 2>&1; then
  configure=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache "${configure[@]}")
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
# Ninja for a new build folder (it schedules the two cores better than make: it compiles a target's
# sources while its dependencies still link); a configured folder keeps its generator.
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
  configure=(-G Ninja "${configure[@]}")
fi
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${configure[@]}"
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
