#!/usr/bin/env bash
# call_overhead.sh — the host cost of a cached tsl_program_call, in C alone
# (bench/call_overhead.c: interp, CPU and CUDA rows, each checked first).
#
# The GPU machine has no SQLite/DLPack headers: build HERE, carry build/.
#   here:   make -s -j2 all && bench/call_overhead.sh --build
#   there:  bench/call_overhead.sh [--n CALLS]     carrying the path `build`
#           e.g. run(command="bench/call_overhead.sh", carry=["build"])
# Without a GPU the CUDA rows say "no CUDA device" and the status is 0.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--build" ]; then
    [ -f build/libtessel.a ] || { echo "call_overhead.sh: build/libtessel.a is missing: run make -s -j2 all first"; exit 1; }
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Iinclude -Isrc -Itests bench/call_overhead.c build/libtessel.a \
        -lsqlite3 -ldl -lm -lpthread -o build/call_overhead
    exit 0
fi
[ -x build/call_overhead ] || { echo "build/call_overhead is missing: bench/call_overhead.sh --build here, then carry build/"; exit 1; }
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache}
exec build/call_overhead "$@"
