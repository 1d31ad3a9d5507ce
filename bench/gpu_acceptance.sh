#!/usr/bin/env bash
# The GPU acceptance of issues 11 and 58, on a machine with one NVIDIA H100 or H200 (the device tool's
# machines: CUDA 13, PyTorch 2.11, cmake, no package registry). Run from the repository root,
# logs under $OUT (default out/gpu). Either this machine's build, carried (as on 2026-11-26):
#
#   bash scripts/pack_gpu_run.sh            # here: gpu-pack.tar.xz
#   bash bench/gpu_acceptance.sh unpack     # there, carrying gpu-pack.tar.xz: build/ and data/
#
# or a build there (not yet tried on a GPU machine):
#
#   bash scripts/gather_gpu_deps.sh         # here, once: gpu-deps.tar.xz (Debian's libraries)
#   # on the GPU machine, carrying gpu-deps.tar.xz and data/corpus.txt:
#   bash bench/gpu_acceptance.sh build      # configure and build build-gpu/ (about 5 min, 16 cores)
#
# then, on the same machine (each stage may be its own call while the machine stays warm; `all`
# runs unpack, tests, bench, predict, fp8 and host in one call, each even when one before
# failed). Expected device time of `all`: about 12 min on an H100 plus the machine's start (on
# 2026-11-28 tests, bench and one predict run took 290 s together; now about 2 min more for the
# fused and graphed benches, 3-4 min for two more predict runs, 2-3 min for fp8 at ~0.5 s a step
# of the 1.1B model). Past the device tool's 10 min a call: run `unpack`, `tests` and `bench` in
# one call (about 5 min), `predict` and `fp8` in the next (about 7 min), `host` if time is left:
#   bash bench/gpu_acceptance.sh tests      # the equivalence, bf16 and CUDA-kernel tests
#   bash bench/gpu_acceptance.sh bench      # tokens/s and MFU against PyTorch eager: composite,
#                                           # fused kernels, fused kernels in CUDA graphs
#   bash bench/gpu_acceptance.sh predict    # dtwin run on the three H100 scenarios, 3 runs
#                                           # (PREDICT_RUNS) and their medians
#   bash bench/gpu_acceptance.sh fp8        # h100-1b in bf16 and fp8: loss and step time
#   bash bench/gpu_acceptance.sh host       # host µs per operator: CPU and GPU tensors (1 min)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  unpack | build | tests | bench | predict | fp8 | host) ;;
  all)
    status=0
    for stage in unpack tests bench predict fp8 host; do bash bench/gpu_acceptance.sh "$stage" || status=1; done
    exit "$status"
    ;;
  *)
    echo "usage: bash bench/gpu_acceptance.sh unpack|build|tests|bench|predict|fp8|host|all" >&2
    exit 2
    ;;
esac
out="${OUT:-out/gpu}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if [ "$1" = host ]; then
  # The devices' host_op_overhead on this GPU host, needing no build: the layer's operators on
  # CPU tensors (what models/devices/ has, from the CPU machine) and on the GPU's (the launches).
  for device in cpu cuda; do
    python3 bench/host_dispatch.py --device "$device" 2>&1 | tee "$out/host_dispatch-$device.md"
  done
  exit 0
fi
if [ "$1" = unpack ] || [ -f gpu-pack-source-dir ]; then
  [ -f gpu-pack-source-dir ] || tar -xJf gpu-pack.tar.xz
  # The binaries name the folder they were built from (CTest files, test data, DTWIN_PYTHON) and
  # LibTorch's lib folder in their RUNPATH: both are linked to what this machine has.
  source_dir="$(cat gpu-pack-source-dir)" torch_lib="$(cat gpu-pack-torch-lib)"
  if [ ! -e "$source_dir" ]; then mkdir -p "$(dirname "$source_dir")" && ln -s "$PWD" "$source_dir"; fi
  here_torch_lib="$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
  if [ ! -e "$torch_lib" ]; then mkdir -p "$(dirname "$torch_lib")" && ln -s "$here_torch_lib" "$torch_lib"; fi
  # DTWIN_PYTHON (source_dir/.venv/bin/python) runs the plots: this machine's python3.
  if [ ! -e .venv/bin/python ]; then
    mkdir -p .venv/bin && printf '#!/bin/sh\nexec python3 "$@"\n' > .venv/bin/python
    chmod +x .venv/bin/python
  fi
  cudart="$(find "$(dirname "$(dirname "$here_torch_lib")")/nvidia" -name 'libcudart.so.13*' | head -1)"
  export LD_LIBRARY_PATH="$PWD/gpu-lib:$(dirname "$cudart"):${LD_LIBRARY_PATH:-}"
  build_dir=build
else
  if [ ! -d gpu-deps/usr ]; then
    mkdir -p gpu-deps && tar -C gpu-deps -xJf gpu-deps.tar.xz
  fi
  export CMAKE_PREFIX_PATH="$PWD/gpu-deps/usr"
  export LD_LIBRARY_PATH="$PWD/gpu-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  build_dir=build-gpu
fi
dtwin="$build_dir/cli/dtwin"

case "$1" in
  unpack | build)
    nvidia-smi | tee "$out/nvidia-smi.txt"
    # A driver older than the wheel's CUDA shows no GPU, and every command would exit 2.
    python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda,
      'GPUs', torch.cuda.device_count()); assert torch.cuda.is_available()" |
      tee -a "$out/nvidia-smi.txt"
    [ "$1" = unpack ] && exit 0
    BUILD_DIR=build-gpu bash scripts/build.sh -DDTWIN_PYTHON="$(command -v python3)" \
      -DDTWIN_CUDA=ON 2>&1 | tee "$out/build.log"
    ;;
  tests)
    # Every training of tests/test_train.cpp on the GPU (DTWIN_TEST_DEVICE): the layouts'
    # losses against the single-rank run within 1e-5 (fused kernels, MoE, EP and CP included,
    # the ranks sharing the GPU over Gloo: one GPU cannot run two NCCL ranks), bf16 against fp32
    # and fp8 against bf16 within 1% over 50 steps; then the CPU-only tests that touch the GPU
    # code paths.
    (cd "$build_dir" && DTWIN_TEST_DEVICE=cuda ctest -j4 --output-on-failure \
      -R "single-rank model|bf16 training|fp8 training" 2>&1) | tee "$out/tests-cuda.log"
    (cd "$build_dir" && ctest -j8 --output-on-failure -R "staged|round-robin|H100|bf16 stage" 2>&1) |
      tee -a "$out/tests-cuda.log"
    # dtwin's CUDA kernels and fp8 quantisation against their CPU references, and the CUDA
    # graphs' losses against eager ones (hidden from CTest: [.cuda]).
    "$build_dir/tests/dtwin_torch_tests" "[cuda]" 2>&1 | tee -a "$out/tests-cuda.log"
    (cd "$build_dir/tests" && ./dtwin_train_tests "[cuda]" 2>&1) | tee -a "$out/tests-cuda.log"
    ;;
  bench)
    for scenario in h100-single h100-124m; do
      python3 bench/train_vs_pytorch.py "$dtwin" 30 --scenario "scenarios/$scenario.yaml" 2>&1 |
        tee "$out/bench-$scenario.md"
      python3 bench/train_vs_pytorch.py "$dtwin" 30 --scenario "scenarios/$scenario.yaml" \
        --set runtime.fused_kernels=true 2>&1 | tee "$out/bench-$scenario-fused.md"
      python3 bench/train_vs_pytorch.py "$dtwin" 30 --scenario "scenarios/$scenario.yaml" \
        --set runtime.fused_kernels=true --set runtime.cuda_graphs=true 2>&1 |
        tee "$out/bench-$scenario-fused-graphs.md"
    done
    ;;
  fp8)
    python3 bench/fp8_vs_bf16.py "$dtwin" 50 --scenario scenarios/h100-1b.yaml 2>&1 |
      tee "$out/fp8.md"
    ;;
  predict)
    # The acceptance's median of 3 runs (PREDICT_RUNS), each with its own profile (--reprofile).
    runs="${PREDICT_RUNS:-3}"
    for run in $(seq 1 "$runs"); do
      python3 bench/predict_vs_measure.py --gpu "$dtwin" 30 2>&1 | tee "$out/predict-$run.md"
      for dir in out/bench-gpu/*/; do
        scenario="$(basename "$dir")"
        cp "$dir/report.md" "$out/report-$scenario-$run.md" || true
        cp "$dir/compare.json" "$out/compare-$scenario-$run.json" || true
      done
      # The launch-bound model from the profile: the analytic simulation with the device
      # description the run's profile fitted (its GEMM efficiency and host seconds per operator,
      # OUT/profile.device.yaml), compared with the measured step by gpu_predict_median.py.
      for scenario in h100-single h100-124m; do
        fitted="out/bench-gpu/$scenario/profile.device.yaml"
        [ -f "$fitted" ] || { echo "$scenario: no fitted device description" | tee -a "$out/predict-$run.md"; continue; }
        cp "$fitted" "$out/$scenario-$run.device.yaml"
        "$dtwin" simulate "scenarios/$scenario.yaml" --set "cluster.device.model=$PWD/$fitted" \
          -o "$out/analytic-$scenario-$run" > /dev/null || true
      done
    done
    python3 bench/gpu_predict_median.py "$out" "$runs" | tee "$out/predict-median.md"
    ;;
esac
