#!/usr/bin/env bash
# chains_gpu.sh — the merged-chain strategies on a GPU in one call (issue
# 15): each program checked against the interpreter and timed by
# `tessel bench` with the chain's plan and with `sched.chains=0` (the
# groups before the merge: one kernel per layer, or QK^T / softmax rows /
# PV), then compute-sanitizer (memcheck) over a small checked run of each.
#   - mlp16 and mlp20 (Graphene's): 16 and 20 layers 8192 x 128 fp16,
#     bias + ReLU (scaled by 1/8 so the values stay in range):
#     sched/chain_mma.c's kernel (mma.sync, weights streamed across layers)
#     against the per-layer contraction kernels (wgmma on sm_90a); issue
#     15's target for mlp20 is 2x cuBLASLt layer by layer (H100: 278 us,
#     so <= 139 us);
#   - attention fp16 B32xH16 S384 D64 (BERT; B=512 flattened) and a head
#     dim of 96 (the sm_90a plan takes 64/128/256: this one runs
#     sched_attn_plan_tile, the generic CUDA plan) against the three kernels.
# Build here first (make -s -j2 all), then carry build/. Prints, per row,
# the check line, the median and the throughput from `tessel bench`.
set -uo pipefail
cd "$(dirname "$0")/.."
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
T=build/tessel
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
for L in 16 20; do
python3 - "$W/mlp$L.tc" $L <<'EOF'
import sys
L = int(sys.argv[2])
p = ['float16(B,H) X'] + ['float16(H,H) W%d' % k for k in range(1, L + 1)] + ['float16(H) c%d' % k for k in range(1, L + 1)]
b, prev = [], 'X'
for k in range(1, L + 1):
    h = 'Y' if k == L else 'h%d' % k
    b.append('  %s(b,o) +=! %s(b,i) * W%d(o,i)' % (h, prev, k))
    b.append('  %s(b,o) = fmaxf(%s(b,o) + c%d(o), 0) * 0.125' % (h, h, k))
    prev = h
open(sys.argv[1], 'w').write('def mlp%d(' % L + ', '.join(p) + ') -> (Y) {\n' + '\n'.join(b) + '\n}\n')
EOF
done
sed 's/float(/float16(/g' examples/attention.tc > "$W/attention16.tc"
echo "== device"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
row() { # NAME FILE SIZES...  (OPTS: the option sets to time)
    local name=$1 file=$2; shift 2
    local sz=()
    for s in "$@"; do sz+=(--size "$s"); done
    for o in ${OPTS:-sched.chains=1 sched.chains=0}; do
        echo "== $name ($o)"
        timeout 300 $T bench "$file" --target cuda "${sz[@]}" --options $o --budget 2 2>&1 |
            grep -E "check|median|throughput|error"
    done
}
row "mlp16 fp16 8192x128" "$W/mlp16.tc" B=8192 H=128
OPTS="sched.chains=1 chain.mma.bm=32 sched.chains=0" row "mlp20 fp16 8192x128" "$W/mlp20.tc" B=8192 H=128
row "attention fp16 B32 H16 S384 D64" "$W/attention16.tc" B=512 Tq=384 Tk=384 D=64 E=64
row "attention fp16 B32 H16 S384 D96 (tile plan)" "$W/attention16.tc" B=512 Tq=384 Tk=384 D=96 E=96
echo "== compute-sanitizer memcheck, small odd sizes"
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 7 $T run "$W/mlp16.tc" --target cuda --size B=67 \
    --size H=131 --check 2>&1 | tail -n 3
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 7 $T run "$W/mlp20.tc" --target cuda --size B=130 \
    --size H=72 --check 2>&1 | tail -n 3
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 7 $T run "$W/attention16.tc" --target cuda \
    --size B=3 --size Tq=67 --size Tk=131 --size D=96 --size E=33 --check 2>&1 | tail -n 3
