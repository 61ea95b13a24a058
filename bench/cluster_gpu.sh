#!/usr/bin/env bash
# cluster_gpu.sh — the sm_90a GEMM in clusters of two (issue 9; docs/sched.md
# "The sm_90a plan") on the GPU, in one device command:
#   1. check: examples/tile/gemm_wgmma_cluster.tile on the GPU against
#      NumPy (300x264x520: an odd number of M-tiles), and the contraction's
#      cluster plan (`tessel run --check`, contract.sm90.cluster=2) at sizes
#      no tile divides, under compute-sanitizer (memcheck at every size,
#      racecheck and synccheck at one);
#   2. time: bench/gpu_bench.c's GEMM rows (ROWS: row names, '|' between) with
#      contract.sm90.cluster=1 and =2, alternated REPS times (default 2) in
#      this one process tree, so the spread between repeats is visible
#      beside the difference.
# Build here (make -s -j2 all && bench/gpu.sh --build), carry build/:
#   run(command="bench/cluster_gpu.sh", carry=["build"], timeout_s=600)
# Output in $OUT (or ./gpu-out): cluster-*.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
ROWS=${ROWS:-'GEMM fp16 4096^3|GEMM bf16 4096^3|GEMM fp16 8192^3|GEMM bf16 8192^3|GEMM fp16 4096x'}
REPS=${REPS:-2}
SKIP=${CLUSTER_GPU_SKIP:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0

# report STATUS OK_TEXT FAIL_TEXT OUTPUT: one check's line in
# cluster-check.txt, "ok    OK_TEXT" when STATUS is 0, else "FAIL  FAIL_TEXT"
# with the last 12 lines of OUTPUT, counted in $failed.
report() {
    if [ "$1" -eq 0 ]; then
        echo "ok    $2" | tee -a "$OUT/cluster-check.txt"
    else
        echo "FAIL  $3" | tee -a "$OUT/cluster-check.txt"
        tail -n 12 <<<"$4" | sed 's/^/      /' | tee -a "$OUT/cluster-check.txt"
        failed=$((failed + 1))
    fi
}

if [[ " $SKIP " != *" check "* ]]; then
    echo "== check" | tee "$OUT/cluster-check.txt"
    python3 - "$TMP" <<'EOF'
import sys, numpy as np
rng = np.random.default_rng(20261129)
d = sys.argv[1]
np.save(f"{d}/a.npy", rng.standard_normal((300, 520)).astype(np.float16))
np.save(f"{d}/b.npy", rng.standard_normal((520, 264)).astype(np.float16))
EOF
    for tool in none memcheck racecheck synccheck; do
        san=()
        [ "$tool" = none ] || san=(compute-sanitizer --tool "$tool" --error-exitcode 7 --print-limit 5)
        rm -f "$TMP/c.npy"
        out=$("${san[@]}" build/tessel tile run examples/tile/gemm_wgmma_cluster.tile --target cuda \
            --input "A=$TMP/a.npy" --input "B=$TMP/b.npy" --output "C=$TMP/c.npy" 2>&1)
        rc=$?
        err=$(python3 -c "
import numpy as np
a = np.load('$TMP/a.npy').astype(np.float64); b = np.load('$TMP/b.npy').astype(np.float64)
c = np.load('$TMP/c.npy').astype(np.float64); r = a @ b
print('%.3g' % (np.abs(c - r).max() / np.abs(r).max()))" 2>&1)
        [ $rc -eq 0 ] && python3 -c "import sys; sys.exit(0 if float('$err') < 2e-3 else 1)" 2>/dev/null &&
            { [ "$tool" = none ] || grep -qE "(ERROR SUMMARY|RACECHECK SUMMARY): 0 (errors|hazards)" <<<"$out"; }
        report $? "tile gemm_wgmma_cluster 300x264x520 ($tool): max rel err $err" \
            "tile gemm_wgmma_cluster ($tool): status $rc, err $err" "$out"
    done
    # (dtype, sizes, tools): racecheck and synccheck at one size, memcheck at all
    for c in "float16|M=300 K=72 N=264|memcheck racecheck synccheck" "float16|M=129 K=8 N=8|memcheck" \
        "float16|M=520 K=200 N=136|memcheck" "bfloat16|M=300 K=72 N=264|memcheck"; do
        IFS='|' read -r dt sz tools <<<"$c"
        sed "s/\bfloat(/$dt(/g" examples/matmul.tc > "$TMP/mm_$dt.tc"
        {
            args=()
            for s in $sz; do args+=(--size "$s"); done
            for tool in $tools; do
                out=$(compute-sanitizer --tool "$tool" --error-exitcode 7 --print-limit 5 build/tessel run \
                    "$TMP/mm_$dt.tc" --target cuda --check --options contract.sm90.cluster=2 "${args[@]}" 2>&1)
                rc=$?
                [ $rc -eq 0 ] && grep -qE "(ERROR SUMMARY|RACECHECK SUMMARY): 0 (errors|hazards)" <<<"$out"
                report $? "matmul $dt $sz cluster=2 ($tool)" "matmul $dt $sz cluster=2 ($tool): status $rc" "$out"
            done
        }
    done
fi

if [[ " $SKIP " != *" time "* ]]; then
    echo "== time"
    for rep in $(seq 1 "$REPS"); do
        for cl in 1 2; do
            echo "-- contract.sm90.cluster=$cl, repeat $rep" | tee -a "$OUT/cluster-time.txt"
            TESSEL_OPTIONS=contract.sm90.cluster=$cl timeout 280 build/gpu_bench --only "$ROWS" 2>&1 |
                grep -E "^==|TFLOP|FAIL|rror|mismatch" | tee -a "$OUT/cluster-time.txt"
            [ "${PIPESTATUS[0]}" -eq 0 ] || failed=$((failed + 1))
        done
    done
fi
echo "cluster_gpu.sh: $failed failed"
exit $failed
