#!/bin/sh
# fuzz_smoke.sh SECONDS — build the libFuzzer target over the TC front end
# (make fuzz: clang, ASan + UBSan) and run it for SECONDS over a copy of
# tests/fuzz/corpus, tests/errors and examples/*.tc. Crashing inputs are
# left in build-fuzz/ (crash-*, leak-*, timeout-*). The last line is
# "1 passed, 0 failed" or "0 passed, 1 failed".
secs=${1:-30}
cd "$(dirname "$0")/.." || exit 1
fail() { echo "fuzz_smoke: $1" >&2; echo "0 passed, 1 failed"; exit 1; }
command -v clang >/dev/null 2>&1 || fail "clang is not installed (needed for -fsanitize=fuzzer)"
mkdir -p build-fuzz
make -s fuzz >build-fuzz/make.log 2>&1 || { tail -n 20 build-fuzz/make.log >&2; fail "make fuzz failed"; }
[ -x build-fuzz/fuzz_parse ] || fail "build-fuzz/fuzz_parse was not built"
work=build-fuzz/corpus-run
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
cp tests/fuzz/corpus/* "$work"/ 2>/dev/null
cp tests/errors/*.tc "$work"/ 2>/dev/null
for f in examples/*.tc; do [ -f "$f" ] && cp "$f" "$work/example-$(basename "$f")"; done
log=build-fuzz/fuzz_parse.log
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    build-fuzz/fuzz_parse -max_total_time="$secs" -max_len=4096 -timeout=5 \
    -dict=tests/fuzz/tc.dict \
    -artifact_prefix=build-fuzz/ -print_final_stats=1 "$work" >"$log" 2>&1
rc=$?
tail -n 5 "$log"
if [ $rc -ne 0 ]; then
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -n 5
    fail "the fuzzer found a problem (log: $log)"
fi
echo "1 passed, 0 failed"
