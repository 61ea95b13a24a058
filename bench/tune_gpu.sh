#!/usr/bin/env bash
# tune_gpu.sh — the tuner on the GPU (issues 12 and 16), in one device
# command of at most 600 s:
#   1. fault: build/tune_fault cuda 0 0 — two workers on device ordinals
#      0 and 0 (one GPU serves both; on a two-GPU host pass `0 1`): work
#      split, every candidate timed once, a deliberately faulting kernel in
#      worker 1 ends only its candidate; prints PASS or FAIL.
#   2. cli: `tessel tune --devices 0,0` of a small f32 matmul: the progress
#      line shows both workers.
#   3. table: for GEMM fp16 4096^3 and attention fp16 (B32, S384, D64; the
#      gpu_bench rows, heads folded into B) — `tessel bench` with the
#      defaults pinned, `tessel tune` (one worker, TUNE_BUDGET, default
#      120s), `tessel bench` again (the tuned options, it says so): the
#      tuned-vs-default row and the tuning wall time.
# The GPU machine has no SQLite headers: build here, carry build/.
#   here:   make -s -j2 all && bench/tune_gpu.sh --build
#   there:  bench/tune_gpu.sh          (carry ["build"], timeout_s=600)
# Output in $OUT (or ./gpu-out): tune-*.txt.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--build" ]; then
    [ -f build/libtessel.a ] || { echo "tune_gpu.sh: run make -s -j2 all first"; exit 1; }
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Iinclude -Isrc bench/tune_fault.c build/libtessel.a \
        -lsqlite3 -ldl -lm -lpthread -o build/tune_fault
    exit $?
fi

OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
BUDGET=${TUNE_BUDGET:-120s}
failed=0

echo "== fault (two workers, ordinals 0 0)"
timeout 200 build/tune_fault cuda 0 0 2>&1 | tee "$OUT/tune-fault.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || failed=$((failed + 1))

echo "== cli (tessel tune --devices 0,0)"
timeout 120 build/tessel tune examples/matmul.tc --target cuda --size M=257 --size K=128 --size N=193 \
    --devices 0,0 --generations 2 --population 8 --budget 90s 2>&1 | tee "$OUT/tune-cli.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || failed=$((failed + 1))

f16() { sed 's/float(/float16(/g' "$1" > "$2"; }
f16 examples/matmul.tc /tmp/tune-mm16.tc
f16 examples/attention.tc /tmp/tune-att16.tc
row() { # NAME FILE SIZES...
    local name=$1 file=$2
    shift 2
    echo "== $name"
    {
        echo "-- default"
        timeout 60 build/tessel bench "$file" --target cuda "$@" --options sched.generic=0 --budget 2
        echo "-- tune"
        timeout 300 build/tessel tune "$file" --target cuda "$@" --workers 1 --budget "$BUDGET"
        echo "-- tuned"
        timeout 60 build/tessel bench "$file" --target cuda "$@" --budget 2
    } 2>&1 | tee "$OUT/tune-$name.txt"
}
row gemm-fp16-4096 /tmp/tune-mm16.tc --size M=4096 --size K=4096 --size N=4096
row attention-fp16 /tmp/tune-att16.tc --size B=512 --size Tq=384 --size Tk=384 --size D=64 --size E=64
echo
echo "== summary"
grep -h -E "^(==|--)|median|tuned .* best|options" "$OUT"/tune-gemm*.txt "$OUT"/tune-att*.txt 2>/dev/null
grep -h -E "PASS|FAIL" "$OUT/tune-fault.txt"
exit $failed
