#!/usr/bin/env bash
# hopper.sh — the sm_90a path in one GPU call (issue 9): the hand-written
# warp-specialised wgmma GEMM (examples/tile/gemm_wgmma.tile) run on the GPU
# against NumPy at sizes no tile divides and timed at 4096^3, the TC GEMM
# rows of gpu_bench (each checked before timed) beside PyTorch's, and
# compute-sanitizer over the small cases. Build here first:
#   make -s -j2 all && bench/gpu.sh --build       then carry build/
# HOPPER_ONLY (default "GEMM fp16 4096") picks the gpu_bench/anchors rows
# (several substrings separated by |); HOPPER_SKIP_TILE=1 skips the tile steps.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
ONLY=${HOPPER_ONLY:-GEMM fp16 4096}
echo "== device"; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
if [ -z "${HOPPER_SKIP_TILE:-}" ]; then
echo "== tile gemm_wgmma on the GPU"
for s in "100 264 520" "1 8 8" "128 256 64" "300 520 200"; do
    timeout 120 python3 bench/tile_gpu_check.py examples/tile/gemm_wgmma.tile $s
done
timeout 120 python3 bench/tile_gpu_check.py examples/tile/gemm_wgmma.tile 4096 4096 4096 --reps 20
echo "== compute-sanitizer (memcheck, racecheck) on the small tile GEMM"
for tool in memcheck racecheck; do
    timeout 180 compute-sanitizer --tool $tool --target-processes all --error-exitcode 7 python3 bench/tile_gpu_check.py \
        examples/tile/gemm_wgmma.tile 100 264 136 2>&1 | tail -n 4
done
fi
# HOPPER_ONLY: rows separated by '|'
IFS='|' read -ra ROWS <<< "$ONLY"
for r in "${ROWS[@]}"; do
    echo "== gpu_bench --only '$r'"
    timeout 400 build/gpu_bench --only "$r" --json "$OUT/tessel-${r// /_}.json" 2>&1 | grep -v "^  cold compiles" | tail -n 60
    echo "== anchors --only '$r'"
    timeout 200 env PYTHONUNBUFFERED=1 python3 bench/anchors.py --only "$r" --json "$OUT/anchors-${r// /_}.json" 2>&1 | tail -n 15
done
