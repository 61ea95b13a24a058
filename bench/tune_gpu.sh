#!/usr/bin/env bash
# tune_gpu.sh — the tuner on the GPU (issues 12 and 16), in one device
# command of at most 600 s:
#   1. fault: build/tune_fault cuda 0 0 — two workers on device ordinals
#      0 and 0 (one GPU serves both; on a two-GPU host pass `0 1`): work
#      split, every candidate timed once, a deliberately faulting kernel in
#      worker 1 ends only its candidate; prints PASS or FAIL.
#   2. cli: `tessel tune --devices 0,0` of a small f32 matmul: the progress
#      line shows both workers.
#   3. table: bench/gpu.sh's rows (bench/gpu_bench.c; heads folded into
#      B), in ROWS' order — `tessel tune` (one worker, TUNE_BUDGET,
#      default 120s), then `tessel bench --compare default tuned` (both
#      checked, then COMPARE_ROUNDS alternating rounds, default 10, of
#      COMPARE_BUDGET s a side, default 2: two separate benches of the
#      same kernels differ by ~2.5% on an H200) — printed as
#      bench/tune_cpu.sh's table (default ms, tuned ms, speedup, the
#      rounds' interval and verdict, tuning wall s, options) into
#      $OUT/tune-gpu-table.md. A row starts only
#      when ROW_S (default TUNE_BUDGET + 75 s: the first generation's
#      NVRTC compiles and the confirmation run past the budget) is left of
#      TUNE_GPU_TOTAL (default 460 s: a row started with L s left ends
#      within L + 80 s, so one call stays under 9 minutes); rows it cannot
#      fit say "not run".
#   TUNE_GPU_SKIP="fault cli" skips steps 1 and 2. Besides ROWS' default
#   list, the quantized GEMV rows qgemv-W-NxK and qgemv-W-mM-NxK (W one of
#   uint1/2/4/8; M rows of X, default 1; K a multiple of 128), e.g.
#   ROWS="qgemv-uint8-57344x8192 qgemv-uint4-m8-8192x8192".
# One call of at most 9 minutes, 5 rows (the lead's):
#   run(command="TUNE_BUDGET=30s bench/tune_gpu.sh", carry=["build"], timeout_s=560)
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
CBUDGET=${COMPARE_BUDGET:-2}
CROUNDS=${COMPARE_ROUNDS:-10}
budget_s=${BUDGET%s}
budget_s=${budget_s%.*}
case $budget_s in *m) budget_s=$((${budget_s%m} * 60)) ;; esac
ROW_S=${ROW_S:-$((budget_s + 75))}
DEADLINE=$((SECONDS + ${TUNE_GPU_TOTAL:-460}))
ROWS=${ROWS:-gemm-fp16-4096 attention-fp16 softmax-fp16-12288x1024 layernorm-fp16-12288x1024 gemm-fp16-128x8192x8192 gemm-bf16-4096 gemm-fp32-4096 softmax-fp16-8192x8192 layernorm-fp16-8192x8192 gemm-fp16-16x8192x8192 gemm-fp16-8192}
SKIP=${TUNE_GPU_SKIP:-}
failed=0

if [[ " $SKIP " != *" fault "* ]]; then
    echo "== fault (two workers, ordinals 0 0)"
    timeout 200 build/tune_fault cuda 0 0 2>&1 | tee "$OUT/tune-fault.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed=$((failed + 1))
fi

if [[ " $SKIP " != *" cli "* ]]; then
    echo "== cli (tessel tune --devices 0,0)"
    timeout 120 build/tessel tune examples/matmul.tc --target cuda --size M=257 --size K=128 --size N=193 \
        --devices 0,0 --generations 2 --population 8 --budget 90s 2>&1 | tee "$OUT/tune-cli.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed=$((failed + 1))
fi

f16() { sed 's/float(/float16(/g' "$1" > "$2"; }
bf16() { sed 's/float(/bfloat16(/g' "$1" > "$2"; }
f16 examples/matmul.tc /tmp/tune-mm16.tc
bf16 examples/matmul.tc /tmp/tune-mmbf16.tc
cp examples/matmul.tc /tmp/tune-mm32.tc
f16 examples/attention.tc /tmp/tune-att16.tc
f16 examples/softmax.tc /tmp/tune-sm16.tc
f16 examples/layernorm.tc /tmp/tune-ln16.tc
for w in uint1 uint2 uint4 uint8; do # bench/gpu_bench.c's quantized GEMV (qgemv-W-NxK, qgemv-W-mM-NxK)
    printf 'def qmm(float16(M,K) X, %s(K,N) W, float16(G,N) S) -> (Y) {\n  Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k)\n}\n' \
        "$w" > "/tmp/tune-q$w.tc"
done
spec() { # NAME -> FILE and sizes (bench/gpu_bench.c's rows, heads folded into B)
    case $1 in
    gemm-fp16-4096) echo "/tmp/tune-mm16.tc M=4096 K=4096 N=4096" ;;
    attention-fp16) echo "/tmp/tune-att16.tc B=512 Tq=384 Tk=384 D=64 E=64" ;;
    softmax-fp16-12288x1024) echo "/tmp/tune-sm16.tc N=12288 D=1024" ;;
    layernorm-fp16-12288x1024) echo "/tmp/tune-ln16.tc N=12288 D=1024" ;;
    gemm-fp16-128x8192x8192) echo "/tmp/tune-mm16.tc M=128 N=8192 K=8192" ;;
    gemm-bf16-4096) echo "/tmp/tune-mmbf16.tc M=4096 K=4096 N=4096" ;;
    gemm-fp32-4096) echo "/tmp/tune-mm32.tc M=4096 K=4096 N=4096" ;;
    softmax-fp16-8192x8192) echo "/tmp/tune-sm16.tc N=8192 D=8192" ;;
    layernorm-fp16-8192x8192) echo "/tmp/tune-ln16.tc N=8192 D=8192" ;;
    gemm-fp16-16x8192x8192) echo "/tmp/tune-mm16.tc M=16 N=8192 K=8192" ;;
    gemm-fp16-8192) echo "/tmp/tune-mm16.tc M=8192 K=8192 N=8192" ;;
    qgemv-*) # qgemv-W-NxK or qgemv-W-mM-NxK: Y (M x N) from X (M x K), groups of 128 rows
        local w=${1#qgemv-} m=1
        w=${w%%-*}
        local r=${1#qgemv-$w-}
        case $r in m*) m=${r%%-*} m=${m#m} r=${r#*-} ;; esac
        echo "/tmp/tune-q$w.tc M=$m N=${r%x*} K=${r#*x} G=$(( ${r#*x} / 128 ))" ;;
    *) return 1 ;;
    esac
}
table="$OUT/tune-gpu-table.md"
{
    echo "| program | default ms | tuned ms | speedup | interval | verdict | tuning s | options |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} > "$table"
for name in $ROWS; do
    sp=$(spec "$name") || { echo "unknown row $name"; continue; }
    left=$((DEADLINE - SECONDS))
    if [ "$left" -lt "$ROW_S" ]; then
        echo "== $name: not run ($left s left of TUNE_GPU_TOTAL, a row takes about $ROW_S s)"
        echo "| $name | not run (time) | | | | | | |" >> "$table"
        continue
    fi
    set -- $sp
    file=$1
    shift
    sizes=()
    for z in "$@"; do sizes+=(--size "$z"); done
    log="$OUT/tune-$name.txt"
    echo "== $name"
    {
        echo "-- tune"
        t0=$SECONDS
        lim=$((left - 40 < budget_s + 240 ? left - 40 : budget_s + 240))
        [ "$lim" -ge 10 ] || lim=10
        timeout "$lim" build/tessel tune "$file" --target cuda "${sizes[@]}" --workers 1 --budget "$BUDGET"
        echo "tuning wall $((SECONDS - t0)) s"
        echo "-- default against tuned"
        timeout 90 build/tessel bench "$file" --target cuda "${sizes[@]}" --compare default tuned \
            --rounds "$CROUNDS" --budget "$CBUDGET" > "$OUT/$name.compare" 2>&1
        cat "$OUT/$name.compare"
    } 2>&1 | tee "$log"
    tt=$(sed -n 's/^tuning wall \([0-9]*\) s/\1/p' "$log")
    o=$(sed -n 's/^  B options *//p' "$OUT/$name.compare" | sed 's/  (tuned:.*//')
    echo "| $name | $(bench/compare_row.sh "$OUT/$name.compare") | ${tt:--} | ${o:--} |" >> "$table"
done
echo
echo "== summary ($SECONDS s)"
grep -h -E "PASS|FAIL" "$OUT/tune-fault.txt" 2>/dev/null
cat "$table"
exit $failed
