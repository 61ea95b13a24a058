#!/usr/bin/env bash
# ncu.sh — an Nsight Compute profile of the kernels of one gpu_bench row,
# on the GPU machine (build here with `bench/gpu.sh --build`, carry build/).
#   bench/ncu.sh ROW KERNEL_REGEX [SKIP]
# profiles the launch after SKIP (default 2: past the small-size and the
# full-size checks) of each kernel whose name matches KERNEL_REGEX, while
# gpu_bench runs only the row named ROW (a substring, as --only takes):
# speed of light, memory, occupancy, scheduler and warp-state statistics,
# the source counters (the SASS lines that stall most) and the stall
# reasons (warps stalled for each, per issued instruction). Text lands in
# $OUT/ncu-ROW.txt (ROW with every other character made _). Extra
# TESSEL_OPTIONS pass through to the plan.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/ncu.sh ROW KERNEL_REGEX [SKIP]"; exit 2; }
row=$1 kre=$2 skip=${3:-2}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
name=$(printf '%s' "$row" | tr -c 'A-Za-z0-9' _)
ncu --kernel-name "regex:$kre" --launch-skip "$skip" --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    --section LaunchStats --section SchedulerStats --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section SourceCounters \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    build/gpu_bench --only "$row" > "$OUT/ncu-$name.txt" 2>&1
rc=$?
echo "ncu.sh: '$row' ($kre) -> $OUT/ncu-$name.txt, status $rc"
exit $rc
