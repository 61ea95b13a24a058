"""Helpers of the Python package's tests (a module of its own, so that
running tests/python beside tests/e2e in one pytest does not mix the two
conftest modules)."""
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


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
        import ctypes
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True
