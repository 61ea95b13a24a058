#!/usr/bin/env bash
# gpu.sh — everything a GPU result needs, in one run on the GPU machine:
# the device, the CUDA runtime smoke test (NVRTC -> cubin -> driver launch,
# checked results, copy bandwidth), the host cost of a cached call
# (bench/call_overhead.c), tessel's benchmark table
# (bench/gpu_bench.c: each program checked, then timed), the PyTorch
# anchors (bench/anchors.py), the rows near 1.0x timed in turns with their
# anchors in one process (bench/paired.py), the CUDA unit suites and the CUDA end-to-end
# tests on the real GPU (every example def and cookbook recipe against the
# interpreter), the regression programs and goldens of fixed wrong answers
# (regress-gpu), random programs of every dtype (tests/fuzz/difftest),
# compute-sanitizer over the smoke test's small case and over the generated
# kernels at small sizes (bench/sanitize.sh), and last the merged
# table (bench/report.py), also written to $OUT/gpu-DATE-DEVICE.md for
# bench/results/. Steps run in that order (the figures first).
#
# The GPU machine has no SQLite/DLPack headers: build HERE, carry build/.
#   1. here:   make -s -j2 all && bench/gpu.sh --build
#              (builds build/gpu_bench, build/cuda_smoke and build/call_overhead against
#              build/libtessel.a; nothing runs)
#   2. there:  bench/gpu.sh          carrying the path `build`
#      e.g. run(command="bench/gpu.sh", carry=["build"], timeout_s=600)
#   3. here:   cp <files_at>/gpu-*.md bench/results/ (the lead commits it)
# Each step prints a `== step` header and runs under its own time limit; a
# failing step is reported and the rest go on; the table prints last.
# GPU_SH_ONLY="GEMM fp32|qgemv M=1" runs only the bench and anchor rows
# whose names contain one of those substrings (both take --only);
# GPU_SH_SKIP="unit e2e sanitizer" skips steps by name; GPU_SH_QUICK=1 runs
# gpu_bench at small sizes (a smoke run, not the benchmark); GPU_SH_BUDGET
# (default 570 s) bounds the whole run, each step cut to what is left.
# Results land in $OUT (or ./gpu-out). The exit status is the number of
# failed steps.
set -uo pipefail
cd "$(dirname "$0")/.."

build_bench() {
    local cc=${CC:-cc} ok=0
    for prog in gpu_bench cuda_smoke call_overhead; do
        echo "== build build/$prog"
        $cc -std=c11 -D_GNU_SOURCE -O2 -Iinclude -Isrc -Itests "bench/$prog.c" build/libtessel.a \
            -lsqlite3 -ldl -lm -lpthread -o "build/$prog" || ok=1
    done
    echo "== build build/difftest"
    $cc -std=c11 -D_GNU_SOURCE -O1 -g -Iinclude -Isrc -Itests tests/fuzz/difftest.c tests/fuzz/gen.c \
        build/libtessel.a -lsqlite3 -ldl -lm -lpthread -o build/difftest || ok=1
    return $ok
}

if [ "${1:-}" = "--build" ]; then
    [ -f build/libtessel.a ] || { echo "gpu.sh: build/libtessel.a is missing: run make -s -j2 all first"; exit 1; }
    build_bench
    exit $?
fi

OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
SKIP=" ${GPU_SH_SKIP:-} "
# the whole run stays inside one 600 s device command: steps are cut to
# what is left, keeping 20 s for the report
BUDGET=${GPU_SH_BUDGET:-570}
FAILED=()

# step NAME LIMIT_S COMMAND...: header, time limit, output kept in $OUT/NAME.txt
step() {
    local name=$1 limit=$2
    shift 2
    echo
    echo "== $name"
    if [[ "$SKIP" == *" $name "* ]]; then
        echo "(skipped: GPU_SH_SKIP)"
        return 0
    fi
    local left=$((BUDGET - SECONDS - 20)) t0=$SECONDS rc
    if [ $left -lt 15 ]; then
        echo "(skipped: the run's budget of ${BUDGET}s is spent)"
        FAILED+=("$name")
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/$name.txt"
    rc=${PIPESTATUS[0]}
    if [ $rc -ne 0 ]; then
        [ $rc -eq 124 ] && echo "(step '$name' ran past its ${limit}s limit)"
        echo "(step '$name' failed with status $rc after $((SECONDS - t0)) s; going on)"
        FAILED+=("$name")
    else
        echo "(step '$name' ok in $((SECONDS - t0)) s)"
    fi
    return 0
}

step device 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv

for prog in gpu_bench cuda_smoke; do
    [ -x "build/$prog" ] || echo "build/$prog is missing: build it here first (bench/gpu.sh --build), then carry build/"
done

[ -x build/cuda_smoke ] && step smoke 120 build/cuda_smoke

# the host cost of a cached tsl_program_call (interp, CPU, CUDA), checked first
[ -x build/call_overhead ] && step call-overhead 60 build/call_overhead

# NVRTC takes seconds per generated kernel: fill the cubin cache on all
# cores first (every example kernel for the tests' archs and options and
# for this device; the benchmark programs), so the steps below hit it
[ -x build/gpu_bench ] && step precompile 200 build/gpu_bench --precompile

QUICK=()
[ -n "${GPU_SH_QUICK:-}" ] && QUICK=(--quick)
ONLY=()
[ -n "${GPU_SH_ONLY:-}" ] && ONLY=(--only "$GPU_SH_ONLY")
[ -x build/gpu_bench ] && step bench 380 build/gpu_bench "${QUICK[@]}" "${ONLY[@]}" --json "$OUT/tessel.json"

step anchors 240 env PYTHONUNBUFFERED=1 python3 bench/anchors.py "${ONLY[@]}" --json "$OUT/anchors.json"

# the rows near 1.0x again, tessel and its anchor in turns in one process
# (bench/paired.py: the two steps above run a minute apart), through the
# Python package on PyTorch's tensors
step paired 200 env PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/python" TESSEL_LIB="$PWD/build/libtessel.so" \
    python3 bench/paired.py "${ONLY[@]}"

# the CUDA suites run kernels on the GPU here (and compile every example
# def's kernels for sm_80 and sm_90a: cache hits after `precompile`)
# (GPU_SH_UNIT names other suites or cases instead, e.g. the GPU cases of
# a strategy just changed: "sched_contract.gpu_matches sched_chain")
step unit 300 build/unit_tests ${GPU_SH_UNIT:-runtime_cuda codegen_cuda cuda_target}

step e2e 240 python3 -m pytest -q -p no:cacheprovider tests/e2e/test_cuda_target.py tests/e2e/test_cookbook.py tests/e2e/test_semantics.py -k 'not test_cookbook or cuda'

# the fixed wrong answers: every regression program (tests/fuzz/regress/)
# and the goldens of f64 math and the int8/int16 minimum's abs
# (tests/tile_golden/f64_math.tile, abs_narrow.tile) on the GPU against
# the interpreter
[ -x build/difftest ] && step regress-gpu 120 bash -c 'build/difftest --target cuda --no-save tests/fuzz/regress/*.tc; a=$?
    build/unit_tests codegen_cuda.gpu_regress_goldens; b=$?; exit $((a || b))'

# random programs of every dtype and reduction operator (tests/fuzz/gen.c)
# on the GPU against the interpreter, for as long as the step allows
[ -x build/difftest ] && step fuzz-gpu 120 build/difftest --target cuda -n 100000 --seconds 100 --no-save

[ -x build/cuda_smoke ] &&
    step sanitizer 90 bash -c 'compute-sanitizer --error-exitcode 7 build/cuda_smoke --small 2>&1 | tail -n 5; exit ${PIPESTATUS[0]}'

# memcheck over the generated kernels: every row size arm, f16 and f32
step sanitize-kernels 240 bench/sanitize.sh

echo
echo "== report"
python3 bench/report.py --tessel "$OUT/tessel.json" --anchors "$OUT/anchors.json" --out-dir "$OUT" \
    --failed "${FAILED[*]:-}" || FAILED+=("report")
exit ${#FAILED[@]}
