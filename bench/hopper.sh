#!/usr/bin/env bash
# hopper.sh — the sm_90a path in one GPU call (issue 9): the hand-written
# warp-specialised wgmma GEMM (examples/tile/gemm_wgmma.tile) run on the GPU
# against NumPy at sizes no tile divides and timed at 4096^3, the pipeline
# programs in their TMA and cp.async forms (bench/tile_pipeline_gpu.py), the TC GEMM
# rows of gpu_bench (each checked before timed) beside PyTorch's, and
# compute-sanitizer over the small cases. Build here first:
#   make -s -j2 all && bench/gpu.sh --build       then carry build/
# HOPPER_ONLY (default "GEMM fp16 4096") picks the gpu_bench/anchors rows
# (several substrings separated by |); HOPPER_SKIP_TILE=1 skips the tile steps,
# HOPPER_SKIP_CHECK=1 the layouts check, HOPPER_ONLY=none the benchmark.
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
echo "== tests/tile_hopper programs: GPU against the tile interpreter"
H=tests/tile_hopper
timeout 120 python3 bench/tile_gpu_vs_interp.py $H/wgmma_rega.tile A=45x32:float16 B=32x40:float16 --out C
timeout 120 python3 bench/tile_gpu_vs_interp.py $H/wgmma_smem.tile A=37x64:float16 B=64x40:float16 --out C
timeout 120 python3 bench/tile_gpu_vs_interp.py $H/ring.tile A=64x200:float16 B=200x64:float16 --out C
# an f16 accumulator: the GPU's per-k16 rounding against the interpreter's
timeout 120 python3 bench/tile_gpu_vs_interp.py $H/wgmma_f16acc.tile A=37x192:float16 B=192x40:float16 --out C \
    --tol 5e-3
timeout 120 python3 bench/tile_gpu_vs_interp.py $H/tma_scale.tile X=50x72:float32 --out Y
echo "== compute-sanitizer (memcheck, racecheck) on the small tile GEMM"
for tool in memcheck racecheck; do
    timeout 180 compute-sanitizer --tool $tool --target-processes all --error-exitcode 7 python3 bench/tile_gpu_check.py \
        examples/tile/gemm_wgmma.tile 100 264 136 2>&1 | tail -n 4
done
# pipelines expanded for sm_90a (TMA ring, full/empty mbarriers; the
# producer-role form and the block form) and for sm_80 (cp.async), on the
# GPU against the interpreter and NumPy, rows 16-byte aligned and not;
# the GEMMs timed at 4096^3 beside the hand-written gemm_wgmma.tile
echo "== pipelines in both forms on the GPU (bench/tile_pipeline_gpu.py)"
timeout 900 python3 bench/tile_pipeline_gpu.py --reps 20 2>&1 | tail -n 60
echo "== compute-sanitizer (memcheck, racecheck) on the TMA form of the pipelines"
for tool in memcheck racecheck; do
    for p in "examples/tile/gemm_wgmma_pipeline.tile 100 264 136" "tests/tile_pipeline/gemm_tma.tile 100 72 200"; do
        timeout 180 compute-sanitizer --tool $tool --target-processes all --error-exitcode 7 python3 bench/tile_gpu_check.py \
            $p 2>&1 | tail -n 4
    done
done
fi
# the plan's cases on the GPU against the interpreter: the four operand
# layouts, batched, C read back, epilogues, f32 C; wide (M > 128), narrow
# (M <= 128), more tiles than multiprocessors, and the mma.sync fallback
# (rows TMA cannot take)
if [ -z "${HOPPER_SKIP_CHECK:-}" ]; then
echo "== bench/hopper/layouts.tc on the GPU (--check against the interpreter)"
pass=0; fail=0
for e in nn nt tn tt bnt beta silu_bias f32out gelu_erf_res; do
    for sz in "M=300 N=264 K=136" "M=37 N=72 K=200" "M=1 N=8 K=8" "M=1100 N=4104 K=16" "M=16 N=8456 K=16" \
        "M=130 N=77 K=131"; do
        args=(); for kv in $sz; do args+=(--size "$kv"); done
        [ $e = bnt ] && args+=(--size Z=3)
        [ $e = beta ] && args+=(--set alpha=0.7 --set beta=-1.3)
        if out=$(timeout 120 build/tessel run bench/hopper/layouts.tc --entry $e "${args[@]}" --target cuda --check 2>&1) &&
            grep -q ": ok" <<< "$out"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $e $sz"; echo "$out" | tail -n 4; fi
    done
done
echo "layouts: $pass passed, $fail failed"
echo "== compute-sanitizer (memcheck, racecheck) on the plan's kernels at sizes no tile divides"
for tool in memcheck racecheck; do
    for c in "nn M=300 N=264 K=136" "tt M=37 N=72 K=200" "silu_bias M=300 N=264 K=136" "bnt M=130 N=72 K=40"; do
        set -- $c; e=$1; shift; args=(); for kv in "$@"; do args+=(--size "$kv"); done
        [ $e = bnt ] && args+=(--size Z=2)
        echo "-- $tool $c"
        timeout 200 compute-sanitizer --tool $tool --error-exitcode 7 build/tessel run bench/hopper/layouts.tc \
            --entry $e "${args[@]}" --target cuda 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error|error" | head -n 5
    done
done
fi
# HOPPER_ONLY: rows separated by '|'
IFS='|' read -ra ROWS <<< "$ONLY"
for r in "${ROWS[@]}"; do
    [ "$r" = none ] && continue
    echo "== gpu_bench --only '$r'"
    timeout 400 build/gpu_bench --only "$r" --json "$OUT/tessel-${r// /_}.json" 2>&1 | grep -v "^  cold compiles" | tail -n 60
    echo "== anchors --only '$r'"
    timeout 200 env PYTHONUNBUFFERED=1 python3 bench/anchors.py --only "$r" --json "$OUT/anchors-${r// /_}.json" 2>&1 | tail -n 15
done
