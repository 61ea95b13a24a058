#!/usr/bin/env bash
# tune_cpu.sh — tuned against the default on the CPU, the rows of
# bench/cpu.sh (issue 12's table): for each program, `tessel tune`
# (TUNE_BUDGET, default 60s; all cores), then `tessel bench --compare
# default tuned` (both plans checked, then COMPARE_ROUNDS alternating
# rounds, default 10, of COMPARE_BUDGET seconds a side, default 2: two
# separate benches of the same kernels differ by ~10% on a shared CPU,
# docs/tune.md). Prints a markdown table (default ms, tuned ms, speedup
# A/B of the medians, the rounds' 95%+ interval and its verdict, tuning
# wall time, the options) and writes it, with every command's output, to
# $OUT (default ./tune-out).
#   bench/tune_cpu.sh                   every row (about 8 x (budget + 20 s))
#   ROWS="matmul conv2d" bench/tune_cpu.sh
# On the device machine (16 cores) split the rows over commands of < 600 s:
#   run(command="ROWS='copy transpose row_reduction col_reduction' bench/tune_cpu.sh", carry=["build"])
#   run(command="ROWS='matmul conv2d softmax' bench/tune_cpu.sh", carry=["build"])
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/tune-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-$OUT/cache}
BUDGET=${TUNE_BUDGET:-60s}
CBUDGET=${COMPARE_BUDGET:-2}
CROUNDS=${COMPARE_ROUNDS:-10}
ROWS=${ROWS:-copy transpose row_reduction col_reduction matmul conv2d softmax}
[ -x build/tessel ] || make -s -j"$(nproc)" all >/dev/null || { echo "tune_cpu.sh: build failed"; exit 1; }

prog() { # NAME -> the program text and its sizes (bench/cpu_bench.c's rows)
    case $1 in
    copy) echo 'def copy(float(M,N) A) -> (B) { B(i,j) = A(i,j) }|M=4096 N=4096' ;;
    transpose) echo 'def transpose(float(M,N) A) -> (B) { B(i,j) = A(j,i) }|M=4096 N=4096' ;;
    row_reduction) echo 'def rowsum(float(M,N) A) -> (R) { R(i) +=! A(i,j) }|M=4096 N=4096' ;;
    col_reduction) echo 'def colsum(float(M,N) A) -> (S) { S(j) +=! A(i,j) }|M=4096 N=4096' ;;
    matmul) echo 'def matmul(float(M,K) A, float(K,N) B) -> (C) { C(i,j) +=! A(i,k) * B(k,j) }|M=1024 K=1024 N=1024' ;;
    conv2d) echo 'def conv2d(float(N,C,H,W) I, float(K,C,R,S) Wt) -> (O) { O(n,k,h,w) +=! I(n,c,h + r,w + s) * Wt(k,c,r,s) }|N=8 C=64 H=56 W=56 K=64 R=3 S=3' ;;
    softmax) echo 'def softmax(float(N,D) X) -> (Y) { mx(n) max=! X(n,d)
  e(n,d) = exp(X(n,d) - mx(n))
  s(n) +=! e(n,d)
  Y(n,d) = e(n,d) / s(n) }|N=4096 D=4096' ;;
    *) return 1 ;;
    esac
}

table="$OUT/tune-cpu-$(date -u +%Y-%m-%d)-$(hostname -s 2>/dev/null || echo host).md"
{
    echo "| program | default ms | tuned ms | speedup | interval | verdict | tuning s | options |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} > "$table"
for name in $ROWS; do
    spec=$(prog "$name") || { echo "unknown row $name"; continue; }
    file="$OUT/$name.tc"
    printf '%s\n' "${spec%%|*}" | sed 's/{ /{\n  /; s/ }$/\n}/' > "$file"
    sizes=()
    for s in ${spec##*|}; do sizes+=(--size "$s"); done
    log="$OUT/$name.txt"
    echo "== $name" | tee "$log"
    t0=$SECONDS
    build/tessel tune "$file" --target cpu "${sizes[@]}" --budget "$BUDGET" 2>&1 | tee -a "$log"
    tt=$((SECONDS - t0))
    build/tessel bench "$file" --target cpu "${sizes[@]}" --compare default tuned --rounds "$CROUNDS" \
        --budget "$CBUDGET" 2>&1 | tee -a "$log" > "$OUT/$name.compare"
    o=$(sed -n 's/^  B options *//p' "$OUT/$name.compare" | sed 's/  (tuned:.*//')
    echo "| $name | $(bench/compare_row.sh "$OUT/$name.compare") | $tt | ${o:--} |" >> "$table"
done
echo
cat "$table"
