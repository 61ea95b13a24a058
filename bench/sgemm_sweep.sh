#!/usr/bin/env bash
# sgemm_sweep.sh — GEMM fp32 4096^3 (gpu_bench) over the f32 CUDA-core plan's
# tile options (contract.fma.*: bm bn bk tm tn stages), one row each, on the GPU.
# The default (first row) is 4x4 sub-tiles, 4x8-thread warps and unrolled
# k steps; shapes whose threads make no 4x8 warps keep contiguous micro-tiles.
# Rows of 512 threads get at most 128 registers a thread (the 256-thread
# default uses 250): expect spills there.
# Build here first (make all && bench/gpu.sh --build), carry build/.
cd "$(dirname "$0")/.."
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=/tmp/tessel-cache
for cfg in "128 128 16 8 8 3" "128 128 16 8 8 2" "128 128 16 8 8 4" "128 128 8 8 8 3" "128 128 8 8 8 4" "128 128 32 8 8 3" "128 256 16 8 8 3" "256 128 16 8 8 3" "128 64 16 8 8 3" "64 128 16 8 8 3" "128 128 16 8 4 3" "256 128 8 8 8 2" "128 128 32 8 8 2"; do
  set -- $cfg
  o="contract.fma.bm=$1,contract.fma.bn=$2,contract.fma.bk=$3,contract.fma.tm=$4,contract.fma.tn=$5,contract.fma.stages=$6"
  r=$(TESSEL_OPTIONS=$o timeout 60 build/gpu_bench --only "GEMM fp32 4096" 2>&1 | grep -E "^GEMM fp32|FAIL|failed" | tail -1)
  echo "$cfg :: $r"
done
