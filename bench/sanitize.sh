#!/usr/bin/env bash
# sanitize.sh — compute-sanitizer (memcheck) over tessel's generated kernels
# at small sizes, on a GPU machine: each case is one `tessel run --target
# cuda --check` (fresh random inputs, compared with the interpreter) under
# the sanitizer. The sizes reach every size arm of the row kernels (a warp
# per row with a tail and at exactly 1024, a block per row with a tail and
# at exactly 8192, the stream past 8192), in float32 and float16, and the
# contraction and generic strategies at sizes that are no tile's multiple.
# Prints one line per case; the exit status is the number of failed cases.
# Run by bench/gpu.sh (step `sanitizer`); needs build/tessel. A dry run of
# the cases elsewhere: SANITIZER= TARGET=cpu bench/sanitize.sh
set -uo pipefail
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0

# case FILE DTYPE SIZES...: examples/FILE (or FILE in $TMP) with `float(`
# declarations as DTYPE
case_run() {
    local file=$1 dtype=$2
    shift 2
    local src="$TMP/$(basename "$file" .tc)_$dtype.tc" args=() from="examples/$file"
    [ -f "$from" ] || from="$TMP/$file"
    sed "s/\bfloat(/$dtype(/g" "$from" > "$src"
    for s in "$@"; do args+=(--size "$s"); done
    local out
    out=$(${SANITIZER-compute-sanitizer --error-exitcode 7 --print-limit 5} build/tessel run "$src" \
        --target "${TARGET:-cuda}" --check "${args[@]}" 2>&1)
    local rc=$?
    if [ $rc -eq 0 ] && { [ -n "${SANITIZER+x}" ] || grep -q "ERROR SUMMARY: 0 errors" <<<"$out"; }; then
        echo "ok    $file $dtype $*"
    else
        echo "FAIL  $file $dtype $* (status $rc)"
        tail -n 12 <<<"$out" | sed 's/^/      /'
        fail=$((fail + 1))
    fi
}

for dt in float16 float32; do
    for nd in "N=7 D=1000" "N=9 D=1024" "N=3 D=4099" "N=2 D=8192" "N=2 D=8193"; do
        # shellcheck disable=SC2086
        case_run softmax.tc $dt $nd
        # shellcheck disable=SC2086
        case_run layernorm.tc $dt $nd
    done
    case_run matmul.tc $dt M=67 K=131 N=45
    case_run matmul.tc $dt M=5 K=72 N=264 # M <= 64: the split-K pair
done
# the elementwise forms (flat; a chunk of a row with broadcast reads)
printf 'def silu(float(N,D) X) -> (Y) {\n  Y(n,d) = X(n,d) * sigmoid(X(n,d))\n}\n' > "$TMP/silu.tc"
printf 'def sbr(float(N,D) X, float(D) g, float(D) b) -> (Y) {\n  Y(n,d) = fmaxf(X(n,d) * g(d) + b(d), 0)\n}\n' \
    > "$TMP/sbr.tc"
case_run silu.tc float16 N=7 D=1031
case_run sbr.tc float16 N=5 D=4099
case_run attention.tc float16 B=2 Tq=17 Tk=23 D=64 E=64
case_run attention_causal.tc float16 B=3 Tq=131 Tk=131 D=128 E=128
case_run attention.tc float16 B=2 Tq=1 Tk=300 D=128 E=64
# head dim 256: K/V blocks of 80 through two-stage rings
case_run attention.tc bfloat16 B=2 Tq=131 Tk=67 D=256 E=256
case_run attention_causal.tc bfloat16 B=1 Tq=140 Tk=197 D=256 E=256
case_run conv2d.tc float32 B=2 IP=3 H=11 W=13 OP=5 KH=3 KW=3
case_run mlp3.tc float16 B=5 I=37 H1=29 H2=41 O=17
echo "$fail failed"
exit $fail
