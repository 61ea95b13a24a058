#!/usr/bin/env bash
# cpu.sh — the CPU benchmark, runs on any Linux machine in under ~3 minutes:
#   1. the machine: copy bandwidth (1 core, all cores) and 1-core f32 FMA peak;
#   2. OpenBLAS sgemm 1024^3 on 1 core and on all cores (installs
#      libopenblas-dev with apt-get when it is missing and we may);
#   3. tessel through the public API on the CPU target (TESSEL_NUM_THREADS=1
#      and all cores): copy, transpose, row and column reduction of
#      4096x4096 f32, matmul f32 1024^3, conv2d N=8 C=64 H=W=56 K=64 3x3
#      (valid, output 54x54), a sum of 1e8 f32, a softmax of 4096x4096
#      f32, and the quantized GEMV Y = (W * S) X with packed uint4 and
#      uint3 W 8192x8192, fp16 X and scales per 128 rows (rate: W's bytes,
#      against the copy bandwidth; issue 14 asks >= 50%). Each is checked against the interpreter on a
#      small size before it is timed; median of 5 timed runs after a warm-up
#      (fewer when one run takes over ~1 s, and a warm-up over 4 s is the
#      only run; the table says how many). A phase still running after 150 s is stopped
#      and its missing rows say "not run".
# Prints a table and writes it to bench/results/cpu-DATE-HOST.md. Ratios:
# copy-like ops against the measured bandwidth on the same cores; matmul
# against OpenBLAS on the same cores; conv2d against OpenBLAS sgemm's rate;
# the sum against the bandwidth, with its error beside NumPy's on the same
# values, and the softmax against NumPy (bench/cpu_numpy.py, one core),
# both measured in this run.
# Rows for which the CPU target is not available say so.
set -uo pipefail
cd "$(dirname "$0")/.."
export TESSEL_ROOT=$PWD

cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)
host=$(hostname -s 2>/dev/null || echo host)
day=$(date -u +%Y-%m-%d)
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')
[ -n "$cpu" ] || cpu=$(uname -m)

# OpenBLAS: the header and library, installed if missing (root or sudo only)
have_blas() { [ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || \
              [ -e /usr/include/openblas/cblas.h ] || ls /usr/lib/*/libopenblas.so >/dev/null 2>&1; }
if ! have_blas && command -v apt-get >/dev/null; then
    echo "installing libopenblas-dev ..." >&2
    if [ "$(id -u)" = 0 ]; then apt-get install -y -q libopenblas-dev >/dev/null 2>&1
    elif command -v sudo >/dev/null; then sudo -n apt-get install -y -q libopenblas-dev >/dev/null 2>&1
    fi
fi
blasflags=""
if have_blas; then
    inc=""
    for d in /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas; do
        [ -e "$d/cblas.h" ] && inc="-I$d" && break
    done
    blasflags="-DHAVE_OPENBLAS $inc -lopenblas"
fi

make -s -j2 build/libtessel.a >/dev/null 2>&1 || { echo "cpu.sh: building libtessel.a failed" >&2; exit 1; }
# shellcheck disable=SC2086
cc -std=c11 -D_GNU_SOURCE -O2 -march=native -ffp-contract=fast -Iinclude -Isrc bench/cpu_bench.c \
    build/libtessel.a $blasflags -lsqlite3 -ldl -lm -lpthread -o build/cpu_bench ||
    { echo "cpu.sh: building bench/cpu_bench.c failed" >&2; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== machine" >&2
# cpu_bench links OpenBLAS: outside the blas phase its idle worker threads
# (spinning on sched_yield after start-up) would take cores from the phase
# being measured, so they are limited to 1 there
OPENBLAS_NUM_THREADS=1 build/cpu_bench machine | sed 's/^/machine /' | tee -a "$log" >&2
echo "== openblas" >&2
OPENBLAS_NUM_THREADS=1 build/cpu_bench blas | sed 's/^/blas 1 /' | tee -a "$log" >&2
OPENBLAS_NUM_THREADS=$cores build/cpu_bench blas | sed "s/^/blas $cores /" | tee -a "$log" >&2
echo "== numpy" >&2
sum_npy=$(mktemp --suffix=.npy)
trap 'rm -f "$log" "$sum_npy"' EXIT
if python3 -c 'import numpy' 2>/dev/null; then
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python3 bench/cpu_numpy.py "$sum_npy" | tee -a "$log" >&2
else
    echo "numpy op sum n/a no NumPy" | tee -a "$log" >&2
fi
[ -s "$sum_npy" ] && export CPU_BENCH_SUM_NPY=$sum_npy
echo "== tessel (cpu target)" >&2
OPENBLAS_NUM_THREADS=1 TESSEL_NUM_THREADS=1 timeout 150 build/cpu_bench tessel | sed 's/^/tessel 1 /' | tee -a "$log" >&2
OPENBLAS_NUM_THREADS=1 TESSEL_NUM_THREADS=$cores timeout 150 build/cpu_bench tessel | sed "s/^/tessel $cores /" | tee -a "$log" >&2

# one markdown table from the `key value` lines
table=$(awk -v cores="$cores" '
    $1 == "machine" && $2 == "bw"  { bw[$3] = $4 }
    $1 == "machine" && $2 == "fma" { fma = $4 }
    $1 == "blas" && $3 == "sgemm"  { if ($4 == "n/a") blasna[$2] = $5; else { bt[$2] = $4; br[$2] = $5 } }
    $1 == "tessel" && $3 == "op" {
        key = $4 SUBSEP $2; names[$4] = 1; order[++n] = $4
        if ($5 == "n/a") { s = ""; for (i = 6; i <= NF; i++) s = s (i > 6 ? " " : "") $i; na[key] = s }
        else { tt[key] = $5; tr[key] = $6; tu[key] = $7; tn[key] = $8 }
    }
    $1 == "tessel" && $3 == "err" { terr[$2] = $5 }
    $1 == "numpy" && $2 == "op" && $4 != "n/a" { nt[$3] = $4; nr[$3] = $5 }
    $1 == "numpy" && $2 == "err" { nerr = $4 }
    END {
        print "| benchmark | cores | time (ms) | rate | reference | ratio |"
        print "| --- | --- | --- | --- | --- | --- |"
        split("1 " cores, cs, " ")
        for (c = 1; c <= (cores > 1 ? 2 : 1); c++) {
            k = cs[c]
            if (k in bw) printf "| memory bandwidth (256 MiB copy, read+write) | %s | | %.1f GB/s | | |\n", k, bw[k]
        }
        if (fma != "") printf "| f32 FMA peak (vector FMA, 10 accumulators) | 1 | | %.1f GFLOP/s | | |\n", fma
        for (c = 1; c <= (cores > 1 ? 2 : 1); c++) {
            k = cs[c]
            if (k in bt) printf "| OpenBLAS sgemm 1024^3 | %s | %.2f | %.1f GFLOP/s | FMA peak x cores %.0f | %.2f |\n", k, bt[k], br[k], fma * k, (fma > 0 ? br[k] / (fma * k) : 0)
            else printf "| OpenBLAS sgemm 1024^3 | %s | n/a | %s | | |\n", k, blasna[k]
        }
        split("copy transpose row_reduction col_reduction matmul conv2d qgemv_u4 qgemv_u3", ops, " ")
        split("copy 4096x4096 f32|transpose 4096x4096 f32|row reduction 4096x4096 f32|column reduction 4096x4096 f32|tessel matmul f32 1024^3|tessel conv2d 8x64x56x56, 64x3x3|quantized GEMV M=1 uint4 8192x8192 (W bytes)|quantized GEMV M=1 uint3 8192x8192 (W bytes)", label, "|")
        for (o = 1; o <= 8; o++) for (c = 1; c <= (cores > 1 ? 2 : 1); c++) {
            k = cs[c]; key = ops[o] SUBSEP k
            lab = (o <= 4 || o >= 7 ? "tessel " : "") label[o]
            if (key in tt) {
                if (o <= 4 || o >= 7) { ref = bw[k]; refs = sprintf("bandwidth %.1f GB/s", ref) }
                else { ref = br[k]; refs = sprintf("OpenBLAS %.1f GFLOP/s", ref) }
                printf "| %s | %s | %.2f%s | %.2f %s | %s | %s |\n", lab, k, tt[key], (tn[key] < 5 ? sprintf(" (%d run%s)", tn[key], tn[key] == 1 ? "" : "s") : ""), tr[key], tu[key], refs, (ref > 0 ? sprintf("%.2f", tr[key] / ref) : "")
            } else if (key in na) printf "| %s | %s | n/a | %s | | |\n", lab, k, na[key]
            else printf "| %s | %s | n/a | not run | | |\n", lab, k
        }
        if ("sum" in nt) printf "| NumPy sum 1e8 f32 | 1 | %.2f | %.2f GB/s, rel. error %s | | |\n", nt["sum"], nr["sum"], nerr
        if ("softmax" in nt) printf "| NumPy softmax 4096x4096 f32 | 1 | %.2f | %.2f GB/s | | |\n", nt["softmax"], nr["softmax"]
        for (c = 1; c <= (cores > 1 ? 2 : 1); c++) {
            k = cs[c]; key = "sum" SUBSEP k
            if (key in tt) printf "| tessel sum 1e8 f32 | %s | %.2f | %.2f GB/s, rel. error %s | bandwidth %.1f GB/s; NumPy rel. error %s | %.2f |\n", k, tt[key], tr[key], terr[k], bw[k], nerr, (bw[k] > 0 ? tr[key] / bw[k] : 0)
            else if (key in na) printf "| tessel sum 1e8 f32 | %s | n/a | %s | | |\n", k, na[key]
            key = "softmax" SUBSEP k
            if (key in tt) printf "| tessel softmax 4096x4096 f32 | %s | %.2f | %.2f GB/s | NumPy %.2f ms (1 core) | %.2fx NumPy |\n", k, tt[key], tr[key], nt["softmax"], ("softmax" in nt && tt[key] > 0 ? nt["softmax"] / tt[key] : 0)
            else if (key in na) printf "| tessel softmax 4096x4096 f32 | %s | n/a | %s | | |\n", k, na[key]
        }
    }' "$log")

checks=$(grep -E '^tessel [0-9]+ check ' "$log" | sed 's/^tessel \([0-9]*\) check /- (\1 core(s)) check /')
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
out=bench/results/cpu-$day-$host.md
mkdir -p bench/results
{
    echo "# CPU benchmark, $day"
    echo
    echo "- host: $host; CPU: $cpu; cores: $cores"
    echo "- load average at the start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null) (other work on the machine lowers every figure)"
    echo "- tessel commit: $commit; compiler: $(cc --version | head -n1)"
    echo "- produced by bench/cpu.sh (bench/cpu_bench.c); times are medians of 5 runs unless the row says fewer (7 for OpenBLAS)"
    echo
    echo "$table"
    if [ -n "$checks" ]; then echo; echo "Checks against the interpreter before timing:"; echo; echo "$checks"; fi
} > "$out"
echo
echo "$table"
echo
echo "written to $out"
