#!/usr/bin/env bash
# opt_sweep.sh — gpu_bench rows under several option sets, alternated, then
# the PyTorch anchors of the same rows, in one device command:
#
#   bench/opt_sweep.sh ROWS OPTS [OPTS ...]
#
# ROWS is gpu_bench's --only text (substrings, '|' between); each OPTS is a
# TESSEL_OPTIONS text ("" or "-" for the defaults). Every option set runs
# once in order, then the whole list again (ROUNDS, default 2), so that a
# drift of the machine shows as a difference between rounds, not between
# option sets. Every row is checked before it is timed (gpu_bench's small
# and full-size checks). Build here first (make -s -j2 all && bench/gpu.sh
# --build) and carry build/gpu_bench, build/libtessel.so.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/opt_sweep.sh ROWS OPTS [OPTS ...]"; exit 2; }
rows=$1
shift
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
[ -x build/gpu_bench ] || { echo "build/gpu_bench is missing: bench/gpu.sh --build here first"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
for round in $(seq "${ROUNDS:-2}"); do
    for o in "$@"; do
        [ "$o" = - ] && o=""
        echo "== round $round TESSEL_OPTIONS='$o'"
        TESSEL_OPTIONS="$o" timeout "${ROW_TIMEOUT:-120}" build/gpu_bench --only "$rows" 2>&1 |
            grep -E "TFLOP/s|TB/s|rror|FAIL|fail" || echo "(no row: failed or timed out)"
    done
done
echo "== PyTorch anchors"
PYTHONUNBUFFERED=1 timeout "${ROW_TIMEOUT:-120}" python3 bench/anchors.py --only "$rows" 2>&1 |
    grep -E "TFLOP/s|TB/s|rror" || echo "(anchors failed)"
