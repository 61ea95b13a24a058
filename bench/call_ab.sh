#!/usr/bin/env bash
# call_ab.sh — a cached call's host cost before and after a change, on the
# GPU machine in one command: the library (and Python package) of a base
# commit and of this tree, run alternately, each round both sides:
#
#   call       py_overhead.py's f(A, B, out=C) on torch CUDA float32[4]
#              (the whole Python call: the number issue 13 sets at <= 10 us);
#   c-run      ... its C part through ctypes (tsl_program_call);
#   torch.add  torch.add(A, B, out=C) in the same process;
#   C call     call_overhead.c's tsl_program_call on CUDA tensors, in C;
#   C dlpack   ... tsl_program_call_dlpack (the package's one foreign call);
#   launch     ... a bare rt_cuda_launch of an add kernel: the driver's floor;
#   cuCtxGetCurrent, cuCtxSetCurrent   the driver's context calls alone.
#
# Both sides run the same bench/call_overhead.c (this tree's, built against
# each side's libtessel.a; the base's own when it does not build there) and
# each side's own bench/py_overhead.py over its own python/tessel. Every
# row is checked before it is timed (the scripts fail on a wrong result).
# The machine's spread between runs is larger than the change (torch.add
# has moved 6-9 us from run to run): compare the sides within one run, by
# the median over rounds; the best is printed beside it.
#
# The GPU machine has no SQLite/DLPack headers: build HERE, carry build/ab.
#   here:   make -s -j2 all && bench/call_ab.sh --build BASE   (BASE: a commit, e.g. main before the change)
#   there:  bench/call_ab.sh [--rounds N]   carrying build/ab (about 20 MiB)
#           e.g. run(command="bench/call_ab.sh", carry=["build/ab"], timeout_s=600)
# The logs land in $OUT (or ./ab-out)/ab-*.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
AB=build/ab
CFLAGS_AB="-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra"
LIBS_AB="-lsqlite3 -ldl -lm -lpthread"

# One side into $AB/<name>: its library, call_overhead, package, py_overhead.py.
side() {
    local name=$1 tree=$2 dir=$AB/$1
    mkdir -p "$dir/python" || return 1
    cp "$tree/build/libtessel.so" "$dir/" && cp -r "$tree/python/tessel" "$dir/python/" &&
        cp "$tree/bench/py_overhead.py" "$dir/" || return 1
    if ! ${CC:-cc} $CFLAGS_AB -I"$tree/include" -I"$tree/src" -I"$tree/tests" bench/call_overhead.c \
        "$tree/build/libtessel.a" $LIBS_AB -o "$dir/call_overhead" 2>/dev/null; then
        echo "call_ab.sh: this tree's call_overhead.c does not build against $name's library: its own"
        ${CC:-cc} $CFLAGS_AB -I"$tree/include" -I"$tree/src" -I"$tree/tests" "$tree/bench/call_overhead.c" \
            "$tree/build/libtessel.a" $LIBS_AB -o "$dir/call_overhead" || return 1
    fi
    if [ -f "$tree/.ab-commit" ]; then cp "$tree/.ab-commit" "$dir/commit"; else git rev-parse --short HEAD > "$dir/commit"; fi
}

if [ "${1:-}" = "--build" ]; then
    base=${2:?usage: bench/call_ab.sh --build BASE-COMMIT}
    [ -f build/libtessel.a ] || { echo "call_ab.sh: build/libtessel.a is missing: make -s -j2 all first"; exit 1; }
    src=build/ab-src
    rm -rf "$AB" "$src" && mkdir -p "$src" || exit 1
    git archive "$base" | tar -x -C "$src" || { echo "call_ab.sh: no commit $base"; exit 1; }
    git rev-parse --short "$base" > "$src/.ab-commit"
    echo "building $base in $src (the library alone)"
    make -C "$src" -s -j2 build/libtessel.a build/libtessel.so || exit 1
    side base "$src" && side new . || exit 1
    [ -n "$(git status --porcelain --untracked-files=no)" ] && echo "(+ uncommitted changes)" >> "$AB/new/commit"
    du -sh "$AB"
    exit 0
fi

ROUNDS=3
[ "${1:-}" = "--rounds" ] && ROUNDS=${2:?}
[ -x $AB/base/call_overhead ] && [ -x $AB/new/call_overhead ] ||
    { echo "call_ab.sh: $AB is missing: bench/call_ab.sh --build BASE here, then carry build/ab"; exit 1; }
OUT=${OUT:-$PWD/ab-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD PYTHONUNBUFFERED=1
echo "base $(tr '\n' ' ' < $AB/base/commit), new $(tr '\n' ' ' < $AB/new/commit); $ROUNDS rounds, the sides alternating"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
failed=0
for r in $(seq 1 "$ROUNDS"); do
    for s in base new; do
        dir=$PWD/$AB/$s
        flag=""
        grep -q -- "--cuda-only" "$dir/py_overhead.py" && flag=--cuda-only
        # each side its own kernel cache (the key holds the build)
        (export TESSEL_CACHE_DIR=/tmp/tessel-ab-$s
         "$dir/call_overhead" --cuda-only
         TESSEL_LIB=$dir/libtessel.so PYTHONPATH=$dir/python python3 "$dir/py_overhead.py" $flag) \
            > "$OUT/ab-$s-$r.txt" 2>&1 || { echo "round $r, $s: FAILED ($OUT/ab-$s-$r.txt ends:)"; tail -n 15 "$OUT/ab-$s-$r.txt"; failed=1; }
        echo "round $r, $s: done"
    done
done
python3 - "$OUT" "$ROUNDS" <<'EOF'
import re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = [("call", "CUDA", "call"), ("c-run", "CUDA", "c-run"), ("torch.add", "CUDA", "torch.add"),
        ("C call", None, "cuda"), ("C dlpack", None, "cuda, dlpack"), ("launch", None, "cuda, launch"),
        ("cuCtxGetCurrent", None, "cuCtxGetCurrent"), ("cuCtxSetCurrent", None, "cuCtxSetCurrent")]
vals = {}
for s in ("base", "new"):
    for r in range(1, rounds + 1):
        try:
            text = open(f"{out}/ab-{s}-{r}.txt").read()
        except OSError:
            continue
        cuda = text[text.find("CUDA, torch"):] if "CUDA, torch" in text else ""
        for name, sect, key in rows:
            src = cuda if sect else text.split("CUDA, torch")[0]
            m = re.search(r"^  %s +([0-9.]+)\s*$" % re.escape(key), src, re.M)
            if m:
                vals.setdefault((name, s), []).append(float(m.group(1)))
print(f"\nus per call; median (best) over the rounds, base | new")
print(f"  {'what':16s} {'base':>15s} {'new':>15s} {'new - base':>11s}")
for name, _, _ in rows:
    b, n = vals.get((name, "base"), []), vals.get((name, "new"), [])
    f = lambda v: f"{statistics.median(v):6.2f} ({min(v):5.2f})" if v else f"{'-':>15s}"
    d = f"{statistics.median(n) - statistics.median(b):+11.2f}" if b and n else ""
    print(f"  {name:16s} {f(b):>15s} {f(n):>15s} {d}")
EOF
exit $failed
