#!/usr/bin/env bash
# test.sh — every test tessel has, from a fresh machine: installs what is
# missing, builds with warnings as errors, runs the unit tests (normal and
# ASan+UBSan builds), the end-to-end tests against NumPy, and a bounded
# fuzzing run. Ends with the total `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
export TESSEL_ROOT=$PWD
total_pass=0
total_fail=0
FUZZ_SECONDS=${FUZZ_SECONDS:-30}

# stage NAME CMD...: run a stage, echo its output, add its counts. A stage
# that prints no count line but fails counts as one failure.
stage() {
    local name=$1; shift
    echo "=== $name"
    local log
    log=$(mktemp)
    "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    local p f
    p=$(grep -Eo '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1 | cut -d' ' -f1)
    f=$(grep -Eo '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1 | cut -d' ' -f3)
    if [ -z "$p" ]; then  # pytest's summary line
        p=$(grep -Eo '[0-9]+ passed' "$log" | tail -n1 | cut -d' ' -f1)
        f=$(grep -Eo '[0-9]+ (failed|error)' "$log" | awk '{s+=$1} END {print s+0}')
    fi
    p=${p:-0}; f=${f:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "stage '$name' exited $rc"; fi
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
    rm -f "$log"
}

scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

# Warnings are errors in the main build; the sanitizer build (-O1) is for
# run-time checks, and GCC's flow-based warnings differ between levels.
build() {
    make -j"$(nproc)" WERROR=1 all && make -j"$(nproc)" WERROR=0 asan
}
stage build build
stage unit build/unit_tests
stage unit-asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build-asan/unit_tests
if ls tests/e2e/test_*.py >/dev/null 2>&1; then
    stage e2e python3 -m pytest -q -p no:cacheprovider tests/e2e
fi
# the Python package over build/libtessel.so (torch tests skip without torch,
# CUDA ones without a GPU)
stage python python3 -m pytest -q -p no:cacheprovider tests/python
if ls tests/fuzz/fuzz_*.c >/dev/null 2>&1; then
    stage fuzz scripts/fuzz_smoke.sh "$FUZZ_SECONDS"
fi

echo
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
