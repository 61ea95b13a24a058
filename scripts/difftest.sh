#!/bin/sh
# difftest.sh [N] [difftest options...] — the longer differential-testing
# run: builds the library and tests/fuzz/difftest, then runs N (default 1000)
# fresh random TC programs on the interpreter and the CPU target and compares
# them. Failures are printed with program, sizes and seeds and saved under
# tests/fuzz/regress/ (commit them: they become regression tests). Extra
# arguments go to difftest (e.g. -s SEED to repeat a run, -e 20000 for
# larger tensors, --target cuda). The last line is "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
n=${1:-1000}
[ $# -gt 0 ] && shift
make -s -j2 build/libtessel.a || { echo "difftest.sh: building the library failed"; echo "0 passed, 1 failed"; exit 1; }
# the one-line build documented at the top of tests/fuzz/difftest.c
cc -std=c11 -D_GNU_SOURCE -O1 -g -Iinclude -Isrc -Itests tests/fuzz/difftest.c tests/fuzz/gen.c \
    build/libtessel.a -lsqlite3 -ldl -lm -lpthread -o build/difftest ||
    { echo "difftest.sh: building difftest failed"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p tests/fuzz/regress
exec build/difftest -n "$n" "$@"
