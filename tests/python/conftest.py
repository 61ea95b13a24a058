"""Shared setup of the Python package's tests.

The package is imported from the source tree (python/) over the library in
build/ (make builds it), unless TESSEL_PY_INSTALLED=1 asks for the installed
one. Random inputs are fresh every run (never zeros); TESSEL_SEED repeats one.
"""
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if os.environ.get("TESSEL_PY_INSTALLED") != "1":
    sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("TESSEL_SEED", np.random.SeedSequence().entropy % (2**32)))
    print(f"seed {seed} (TESSEL_SEED to repeat)")
    return np.random.default_rng(seed)


def rand(rng, shape, dtype="float32", lo=-1.0, hi=1.0):
    """Fresh random values of a dtype (integers in [lo, hi], bools both ways)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def has_gpu():
    try:
        import tessel  # noqa: F401
        import ctypes
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True
