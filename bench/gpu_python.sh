#!/usr/bin/env bash
# gpu_python.sh — the Python package on a GPU machine, in one run: install it
# into a fresh virtualenv (offline, from the library built here), the C API's
# device-tensor suite on the GPU, the Python tests (NumPy, torch CPU and
# CUDA: streams, CUDA graphs, torch.compile, the profiler), the examples,
# then bench/py_overhead.py (host overhead of a cached call, CPU and CUDA,
# through the generated fast call: tests/python/test_fast.py's CUDA case
# checks that path, its stream, its strided-input fallback and a graph,
# and the profiler's proof that no copy is on the call path), then the CUDA
# target's unit suites.
#
# The GPU machine has no DLPack/SQLite headers: build HERE, carry build/.
#   here:   make -s -j2 all
#   there:  bench/gpu_python.sh     carrying the library, CLI and unit tests
#           e.g. run(command="bench/gpu_python.sh", timeout_s=600,
#                    carry=["build/libtessel.so", "build/tessel", "build/unit_tests"])
# Output lands in $OUT (or ./gpu-out)/python-*.txt; the exit status is the
# number of failed steps. GPU_PY_SKIP="unit-cuda" skips steps by name (the
# CUDA suites alone take 180 s).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tessel-cache} PYTHONUNBUFFERED=1
BUDGET=${GPU_SH_BUDGET:-570}
FAILED=()

step() {
    local name=$1 limit=$2
    shift 2
    echo
    echo "== $name"
    if [[ " ${GPU_PY_SKIP:-} " == *" $name "* ]]; then
        echo "(skipped: GPU_PY_SKIP)"
        return 0
    fi
    local left=$((BUDGET - SECONDS - 10)) t0=$SECONDS rc
    if [ $left -lt 15 ]; then
        echo "(skipped: the run's budget of ${BUDGET}s is spent)"
        FAILED+=("$name")
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/python-$name.txt"
    rc=${PIPESTATUS[0]}
    if [ $rc -ne 0 ]; then
        echo "(step '$name' failed with status $rc after $((SECONDS - t0)) s)"
        FAILED+=("$name")
    else
        echo "(step '$name' ok in $((SECONDS - t0)) s)"
    fi
}

[ -f build/libtessel.so ] || { echo "gpu_python.sh: build/libtessel.so is missing: run make -s -j2 all here first"; exit 1; }
VENV=${TMPDIR:-/tmp}/tessel-venv
step device 30 nvidia-smi --query-gpu=name,driver_version --format=csv
# The GPU machine's python3 is itself a venv (/opt/torch/.venv: NumPy and
# torch), and --system-site-packages exposes the BASE interpreter's
# packages, not that venv's: a .pth file in the fresh venv adds python3's
# own site-packages after the venv's (offline; the install is still real:
# tessel comes from the venv, the test below checks where it loads from).
venv_install() {
    rm -rf "$VENV" && python3 -m venv --system-site-packages "$VENV" || return 1
    local parent mine
    parent=$(python3 -c 'import site, sysconfig; print("\n".join(dict.fromkeys([*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])))') || return 1
    mine=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
    printf '%s\n' "$parent" > "$mine/tessel-parent-env.pth"
    echo "parent environment's site-packages (in $mine/tessel-parent-env.pth):"; sed 's/^/  /' "$mine/tessel-parent-env.pth"
    TESSEL_LIB=$PWD/build/libtessel.so "$VENV/bin/python" -m pip install -q --no-index --no-deps ./python || return 1
    (cd / && "$VENV/bin/python" -c 'import tessel, numpy; print(tessel.__file__, tessel.library_path, "numpy", numpy.__version__)
try:
    import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())
except ImportError: print("no torch")
import sys; sys.exit(0 if tessel.__file__.startswith(sys.prefix) else "tessel was not imported from the venv")')
}
export -f venv_install; export VENV
step install 120 bash -c venv_install
# the installed package; without a venv (no ensurepip there) the source tree's
PY=$VENV/bin/python INSTALLED=1
if ! "$PY" -c 'import tessel' >/dev/null 2>&1; then PY=python3 INSTALLED=0; export PYTHONPATH=$PWD/python; fi
step unit-device 120 build/unit_tests api_device api_call
step pytest 300 env TESSEL_PY_INSTALLED=$INSTALLED "$PY" -m pytest -q -p no:cacheprovider -rs tests/python/test_torch.py tests/python/test_numpy.py tests/python/test_fast.py
step examples 150 bash -c "for f in examples/python/*.py; do echo \"-- \$f\"; $PY \$f || exit 1; done"
step overhead 120 "$PY" bench/py_overhead.py
# the CUDA target's own suites (memsets and syncs on the device's stream)
step unit-cuda 180 build/unit_tests cuda_target runtime_cuda driver
echo
if [ ${#FAILED[@]} -eq 0 ]; then echo "gpu_python.sh: all steps ok"; else echo "gpu_python.sh: failed steps: ${FAILED[*]}"; fi
exit ${#FAILED[@]}
