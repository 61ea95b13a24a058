#!/usr/bin/env bash
# atoms9_gpu.sh — the GPU checks of the target-table work of issue 9 item 1
# and the tf32 option (branch atoms9), in one device command of a few
# minutes: every tile program of examples/tile and tests/tile_golden run on
# the GPU against the tile interpreter at three sizes
# (codegen_cuda.gpu_matches_interp: the new mma_rows.tile — m16n8k8
# f16/bf16, f16 accumulators, tf32 — ldst_matrix.tile — ldmatrix .x2 /
# .x1.trans chosen on their own, stmatrix .x2 / .x4 / .x2.trans on sm_90 —
# and the decomposed kernels now printed as their decompositions), then
# `tessel run --allow-tf32 --check` on CUDA at sizes no tile divides.
#
# Build here (the GPU machine lacks the SQLite/DLPack headers), carry build/:
#   here:  make -s -j2 all
#   there: run(command="bench/atoms9_gpu.sh", carry=["build"], timeout_s=600)
# Prints each step's output and ends with `N passed, N failed` (steps).
set -uo pipefail
cd "$(dirname "$0")/.."
export TESSEL_ROOT=$PWD
export TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-$(mktemp -d)}
pass=0
fail=0
step() {
    local name=$1; shift
    echo "== $name"
    if timeout 280 "$@"; then pass=$((pass + 1)); echo "(ok: $name)"; else fail=$((fail + 1)); echo "(FAILED: $name)"; fi
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
step gpu-vs-interp build/unit_tests codegen_cuda.gpu_matches_interp codegen_cuda.table_helpers \
    codegen_cuda.decomp_printed
for sz in "M=1 K=1 N=1" "M=37 K=129 N=71" "M=300 K=517 N=250"; do
    args=()
    for kv in $sz; do args+=(--size "$kv"); done
    step "tf32-run $sz" build/tessel run examples/matmul.tc --target cuda --allow-tf32 --check "${args[@]}"
done
echo "$pass passed, $fail failed"
exit "$fail"
