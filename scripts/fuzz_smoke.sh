#!/bin/sh
# fuzz_smoke.sh SECONDS [TARGET...] — build the libFuzzer targets (make
# fuzz: clang, ASan + UBSan) and run each for its share of SECONDS (all
# three by default: fuzz_parse over the TC front end, fuzz_tile over the
# tile IR parser + verifier, fuzz_layout over the layout language and
# algebra), each over a copy of its seed corpus. Crashing inputs are left
# in build-fuzz/ (crash-*, leak-*, timeout-*). The last line is
# "N passed, M failed" (one count per target).
# The long run on demand: scripts/fuzz_smoke.sh 3600 fuzz_tile
# FUZZ_TIMEOUT (seconds, default 10) is libFuzzer's limit for one input; a
# long run beside other work wants more (under load a 1.2 s input once
# took 68 s of wall time): FUZZ_TIMEOUT=120 scripts/fuzz_smoke.sh 3600
secs=${1:-30}
timeout_s=${FUZZ_TIMEOUT:-10}
[ $# -gt 0 ] && shift
targets=${*:-fuzz_parse fuzz_tile fuzz_layout}
cd "$(dirname "$0")/.." || exit 1
fail() { echo "fuzz_smoke: $1" >&2; echo "0 passed, 1 failed"; exit 1; }
command -v clang >/dev/null 2>&1 || fail "clang is not installed (needed for -fsanitize=fuzzer)"
mkdir -p build-fuzz
make -s fuzz >build-fuzz/make.log 2>&1 || { tail -n 20 build-fuzz/make.log >&2; fail "make fuzz failed"; }
n=0
for t in $targets; do n=$((n + 1)); done
share=$((secs / n))
[ "$share" -ge 1 ] || share=1
pass=0 failed=0
for t in $targets; do
    [ -x "build-fuzz/$t" ] || fail "build-fuzz/$t was not built"
    work=build-fuzz/corpus-$t
    rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
    case $t in
    fuzz_parse)
        cp tests/fuzz/corpus/* tests/errors/*.tc "$work"/ 2>/dev/null
        for f in examples/*.tc; do [ -f "$f" ] && cp "$f" "$work/example-$(basename "$f")"; done
        opts="-max_len=4096 -dict=tests/fuzz/tc.dict" ;;
    fuzz_tile)
        for f in tests/tile_golden/*.tile examples/tile/*.tile tests/hostile/*.tile; do
            [ -f "$f" ] && cp "$f" "$work/$(echo "$f" | tr / -)"
        done
        opts="-max_len=8192 -dict=tests/fuzz/tile.dict" ;;
    fuzz_layout)
        cp tests/fuzz/corpus_layout/* "$work"/ 2>/dev/null
        opts="-max_len=1024 -dict=tests/fuzz/layout.dict" ;;
    *) fail "unknown target $t" ;;
    esac
    log=build-fuzz/$t.log
    # shellcheck disable=SC2086
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "build-fuzz/$t" -max_total_time="$share" -timeout="$timeout_s" -rss_limit_mb=2048 $opts \
        -artifact_prefix="build-fuzz/$t-" -print_final_stats=1 "$work" >"$log" 2>&1
    rc=$?
    echo "--- $t ($share s): $(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}') executions"
    if [ $rc -ne 0 ]; then
        tail -n 5 "$log"
        grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -n 5
        echo "fuzz_smoke: $t found a problem (log: $log)" >&2
        failed=$((failed + 1))
    else
        pass=$((pass + 1))
    fi
done
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
