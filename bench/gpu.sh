#!/usr/bin/env bash
# gpu.sh — everything a GPU result needs, in one run on the GPU machine:
# prints the device, runs the CUDA unit tests on the real GPU, the CUDA
# runtime smoke test (NVRTC -> cubin -> driver launch, checked results,
# copy bandwidth), compute-sanitizer over the small smoke case, and the
# PyTorch anchors, then a table last.
#
# Build on a CPU machine first (the GPU machine has no SQLite/DLPack
# headers): `make -j2 all && cc ... bench/cuda_smoke.c` (see that file),
# then carry build/ along. Results land in $OUT (or ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=/tmp/tessel-cache

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"

echo "== unit tests (the CUDA runtime suite runs kernels on the GPU here)"
build/unit_tests runtime 2>&1 | tee "$OUT/unit.txt" | tail -n 30

if [ -x build/cuda_smoke ]; then
    echo "== cuda smoke"
    build/cuda_smoke 2>&1 | tee "$OUT/smoke.txt"
    echo "== compute-sanitizer (small case)"
    compute-sanitizer --error-exitcode 7 build/cuda_smoke --small 2>&1 | tail -n 5 | tee "$OUT/sanitizer.txt"
fi

echo "== anchors (PyTorch on this machine)"
PYTHONUNBUFFERED=1 python3 bench/anchors.py --json "$OUT/anchors.json" 2>&1 | tee "$OUT/anchors.txt"
