#!/usr/bin/env bash
# splitk.sh — the small-M GEMM rows (issue 9: 16x8192x8192 and 1x8192x8192
# fp16, and 128x8192x8192 beside them) with each split-K choice of the
# contraction strategy (docs/sched.md, "Split-K for small M"), then
# cuBLAS through PyTorch on the same shapes, in one device command:
#
#   1. here:   make -s -j2 all && bench/gpu.sh --build
#   2. there:  bench/splitk.sh          carrying the path `build`
#      e.g. run(command="bench/splitk.sh", carry=["build"], timeout_s=600)
#
# Prints, per option text, gpu_bench's table rows (each checked against
# the reference before it is timed): `contract.splitk=1` is the plan
# before split-K (the narrow wgmma plan on an H100), the default (empty
# options) S = 2 x SMs / tiles, then S = 2, 4 and 8 fixed; last the
# anchors' cuBLAS rows. The ratio to read: default row / cuBLAS row.
set -uo pipefail
cd "$(dirname "$0")/.."
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
[ -x build/gpu_bench ] || { echo "build/gpu_bench is missing: bench/gpu.sh --build here first, carry build/"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
for o in "contract.splitk=1" "" "contract.splitk=2" "contract.splitk=4" "contract.splitk=8"; do
    echo
    echo "== TESSEL_OPTIONS='$o'"
    TESSEL_OPTIONS="$o" timeout 100 build/gpu_bench --only x8192x8192 2>&1 | grep -E "GEMM|error|fail" || echo "(failed)"
done
echo
echo "== cuBLAS (bench/anchors.py)"
PYTHONUNBUFFERED=1 timeout 120 python3 bench/anchors.py --only x8192x8192 2>&1 | grep -E "GEMM|copy|rror" || echo "(failed)"
