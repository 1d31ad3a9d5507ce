#!/usr/bin/env bash
# Packs this machine's build for a GPU machine that has the same PyTorch (2.11.0+cu130) but no
# package registry, so the GPU checks need no build there: dtwin, dtwin-runtime,
# libdtwin_spm.so, the training tests and their CTest files, the libraries they load that are
# neither the C/C++ runtime, LibTorch nor CUDA (SimGrid, ns-3, yaml-cpp, fmt, SentencePiece, ...),
# data/ (corpus, tokenizers, tokens), and the two paths compiled into the binaries (the source
# folder, and LibTorch's lib folder in the RUNPATH). Writes gpu-pack.tar.xz (about 17 MB);
# `bash bench/gpu_acceptance.sh unpack` unpacks it there. Used on 2026-11-26 on one H100.
#
# Usage: [BUILD_DIR=build] scripts/pack_gpu_run.sh      (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
files=("$build/cli/dtwin" "$build/cli/dtwin-runtime" "$build/runtime/libdtwin_spm.so"
       "$build/tests/dtwin_train_tests" "$build/tests/dtwin_torch_tests" "$build/tests/dtwin_cli_tests")
mkdir -p "$stage/$build/cli" "$stage/$build/runtime" "$stage/$build/tests" "$stage/gpu-lib"
for f in "${files[@]}"; do cp "$f" "$stage/$f"; done
cp "$build/CTestTestfile.cmake" "$stage/$build/"
cp "$build"/tests/*.cmake "$stage/$build/tests/"
ldd "${files[@]}" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libutil)\.so|ld-linux|torch/lib|nvidia|cuda' |
  xargs -I{} cp -L {} "$stage/gpu-lib/"
cp -r data "$stage/"
echo "$PWD" > "$stage/gpu-pack-source-dir"
.venv/bin/python -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' \
  > "$stage/gpu-pack-torch-lib"
tar -C "$stage" -cf - . | xz -T0 -6 > gpu-pack.tar.xz
echo "pack_gpu_run: gpu-pack.tar.xz ($(du -h gpu-pack.tar.xz | cut -f1)); $(ls "$stage/gpu-lib" | wc -l) libraries"
