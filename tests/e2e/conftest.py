"""Shared helpers for the end-to-end tests of the `tessel` CLI.

The tests drive build/tessel as a user would: inputs are written as .npy
files into a per-test temporary directory, the CLI runs in a subprocess
with a timeout, and outputs are read back with NumPy.
"""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
# TESSEL_BIN overrides the binary (e.g. build-asan/tessel)
TESSEL = Path(os.environ.get("TESSEL_BIN", ROOT / "build" / "tessel"))
EXAMPLES = ROOT / "examples"
TIMEOUT_S = 120


def run_cli(*args, timeout=TIMEOUT_S, binary=None, env=None):
    """Run `tessel ARGS...` (or `binary ARGS...`) from the repository root;
    returns the CompletedProcess with text stdout/stderr."""
    binary = Path(binary or TESSEL)
    if not binary.exists():
        pytest.fail(f"{binary} is missing: build it with `make`")
    return subprocess.run([str(binary), *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


def describe(arrays):
    """Shapes and dtypes (not the data) for failure messages."""
    return ", ".join(f"{k}{tuple(v.shape)} {v.dtype}" for k, v in arrays.items())


class TcRun:
    """The result of one `tessel run`: the process and the outputs read."""

    def __init__(self, proc, outputs):
        self.proc = proc
        self.outputs = outputs


def run_tc(tmp_path, program, inputs=None, sets=None, outputs=(), sizes=None, entry=None,
           extra=(), expect_ok=True, binary=None, env=None):
    """Run `tessel run PROGRAM` with `inputs` (name -> array, written as .npy),
    `sets` (scalar name -> value), `sizes` (symbol -> extent) and read every
    name in `outputs` back from the .npy the CLI wrote. With expect_ok the
    run must exit 0 (the failure message shows stderr and the input shapes)."""
    inputs = inputs or {}
    args = ["run", program]
    if entry:
        args += ["--entry", entry]
    for name, arr in inputs.items():
        path = tmp_path / f"in_{name}.npy"
        np.save(path, arr)
        args += ["--input", f"{name}={path}"]
    for name, value in (sets or {}).items():
        args += ["--set", f"{name}={value!r}"]
    for sym, n in (sizes or {}).items():
        args += ["--size", f"{sym}={n}"]
    out_paths = {}
    for name in outputs:
        out_paths[name] = tmp_path / f"out_{name}.npy"
        args += ["--output", f"{name}={out_paths[name]}"]
    args += list(extra)
    proc = run_cli(*args, binary=binary, env=env)
    if expect_ok:
        assert proc.returncode == 0, (
            f"tessel {' '.join(map(str, args[:2]))} exited {proc.returncode} "
            f"with inputs [{describe(inputs)}] sets {sets} sizes {sizes}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    got = {}
    if proc.returncode == 0:
        for name, path in out_paths.items():
            assert path.exists(), f"--output {name} did not write {path}"
            got[name] = np.load(path)
    return TcRun(proc, got)


@pytest.fixture
def rng():
    """A fresh generator per test: no fixed seed, so every run sees new data."""
    return np.random.default_rng()
