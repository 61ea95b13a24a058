"""Shared setup of the Python package's tests (helpers: pyhelpers.py).

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
sys.path.insert(0, str(Path(__file__).resolve().parent))
if os.environ.get("TESSEL_PY_INSTALLED") != "1":
    sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("TESSEL_SEED", np.random.SeedSequence().entropy % (2**32)))
    print(f"seed {seed} (TESSEL_SEED to repeat)")
    return np.random.default_rng(seed)
