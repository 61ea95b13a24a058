#!/usr/bin/env bash
# setup.sh — install what tessel's build and tests need, only when missing.
# Safe to run again; needs root (or sudo) only for what is missing.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
[ -f /usr/include/dlpack/dlpack.h ] || need_apt+=(libdlpack-dev)
[ -f /usr/include/sqlite3.h ] || need_apt+=(libsqlite3-dev)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-pip)
# venv with pip: tests/python/test_install.py installs the package into one
python3 -c 'import ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
if ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    need_apt+=(libclang-rt-dev)
fi

if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing ${need_apt[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    # libclang-rt-dev is named per LLVM version on older releases
    if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null; then
        alt=()
        for p in "${need_apt[@]}"; do
            [ "$p" = libclang-rt-dev ] && p=libclang-rt-14-dev
            alt+=("$p")
        done
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${alt[@]}" >/dev/null
    fi
fi

if ! python3 -c 'import numpy, pytest' >/dev/null 2>&1; then
    echo "setup: installing numpy and pytest for $(command -v python3)"
    python3 -m pip install -q numpy pytest 2>/dev/null ||
        python3 -m pip install -q --break-system-packages numpy pytest
fi

# ml_dtypes: the reference for the 8-, 6- and 4-bit float encodings
# (tests/e2e/test_lowbit_formats.py skips that comparison without it)
if ! python3 -c 'import ml_dtypes' >/dev/null 2>&1; then
    python3 -m pip install -q ml_dtypes 2>/dev/null ||
        python3 -m pip install -q --break-system-packages ml_dtypes 2>/dev/null ||
        echo "setup: ml_dtypes not installed (its comparison will be skipped)"
fi
