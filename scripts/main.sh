#!/usr/bin/env bash
# main.sh — tessel's main job: build, then run examples/matmul.tc on fresh
# random inputs, checked against the reference interpreter where a compiled
# target exists, and print what was computed and how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# only what the job needs: the CLI and its library
make -s -j"$(nproc)" build/tessel
# on the default target (CUDA with a GPU, else the CPU), checked against the
# reference interpreter
./build/tessel run examples/matmul.tc --size M=384 --size K=257 --size N=191 --check "$@"
