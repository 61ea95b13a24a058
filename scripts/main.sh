#!/usr/bin/env bash
# main.sh — tessel's main job: build, then run examples/matmul.tc on fresh
# random inputs, checked against the reference interpreter where a compiled
# target exists, and print what was computed and how long it took; then a
# matmul and a softmax from Python on NumPy arrays, checked against NumPy.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# only what the job needs: the CLI and the library (static for the CLI,
# shared for Python)
make -s -j"$(nproc)" build/tessel build/libtessel.so
# on the default target (CUDA with a GPU, else the CPU), checked against the
# reference interpreter
./build/tessel run examples/matmul.tc --size M=384 --size K=257 --size N=191 --check "$@"
# the same from Python, on NumPy arrays, checked against NumPy (the package
# from this checkout; `python3 -m pip install ./python` installs it)
PYTHONPATH=python python3 examples/python/numpy_cpu.py
