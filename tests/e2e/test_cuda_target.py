"""The CUDA target end to end, through the CLI: every def of examples/*.tc
through `tessel run --target cuda --check` on each shape set of
test_examples.py (dims of 1 and primes, fresh random inputs): the run must
pass its own comparison with the interpreter and give NumPy's answer; an
out-of-range gather index is the interpreter's located error with exit
status 1, and a good run follows in a fresh process. Without a GPU (CI):
only the clear "target 'cuda' is unavailable" error is checked, everything
else is skipped. bench/gpu.sh runs this file on the GPU machine."""
import functools

import numpy as np
import pytest

from conftest import run_cli, run_tc
from test_examples import CASES, SPECS, compare, d


@functools.lru_cache(maxsize=1)
def gpu_present():
    """One tiny CUDA run: exit 0 means a usable device (and NVRTC)."""
    proc = run_cli("run", "examples/matmul.tc", "--target", "cuda", "--size", "M=2", "--size", "K=3",
                   "--size", "N=2")
    return proc.returncode == 0


needs_gpu = pytest.mark.skipif("not gpu_present()", reason="no CUDA device")


def test_unavailable_is_clear():
    if gpu_present():
        pytest.skip("a CUDA device is present")
    proc = run_cli("run", "examples/matmul.tc", "--target", "cuda", "--size", "M=2", "--size", "K=3",
                   "--size", "N=2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "target 'cuda' is unavailable: " in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "Segmentation" not in proc.stderr


@needs_gpu
@pytest.mark.parametrize("key,which", CASES)
def test_example_on_gpu(tmp_path, rng, key, which):
    file, entry = key
    spec = SPECS[key]
    inputs = spec["make"](rng, spec["shapes"][which])
    sets = spec["scalars"](rng) if "scalars" in spec else {}
    want = spec["ref"]({**{k: d(v) for k, v in inputs.items()}, **sets})
    res = run_tc(tmp_path, f"examples/{file}", inputs=inputs, sets=sets, outputs=list(want),
                 entry=entry, extra=["--target", "cuda", "--check"])
    out = res.proc.stdout
    assert " on cuda in " in out, out
    checks = [line for line in out.splitlines() if line.startswith("check ")]
    assert len(checks) == len(want), out
    assert all(line.endswith(": ok") for line in checks), out
    for name, ref in want.items():
        compare(name, res.outputs[name], ref, inputs)


@needs_gpu
def test_gather_out_of_range_on_gpu(tmp_path, rng):
    x = rng.uniform(-1, 1, size=5).astype(np.float32)
    idx = np.array([[1, 4, 0], [2, 7, 3]], dtype=np.int64)
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": x, "I": idx}, outputs=["Z"],
                 extra=["--target", "cuda"], expect_ok=False)
    assert res.proc.returncode == 1, res.proc.stdout + res.proc.stderr
    err = res.proc.stderr
    assert "index 7 out of range for dimension 0 of 'X' (size 5)" in err, err
    assert "gather.tc:" in err, err
    good = rng.integers(0, 5, size=(3, 2), dtype=np.int64)
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": x, "I": good}, outputs=["Z"],
                 extra=["--target", "cuda", "--check"])
    np.testing.assert_array_equal(res.outputs["Z"], x[good])


@needs_gpu
def test_larger_than_a_block_on_gpu(tmp_path, rng):
    """Sizes past one block and not multiples of it (the grid's masked tail)."""
    a = rng.uniform(-1, 1, size=(131, 67)).astype(np.float32)
    b = rng.uniform(-1, 1, size=(67, 257)).astype(np.float32)
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": a, "B": b}, outputs=["C"],
                 extra=["--target", "cuda", "--check"])
    np.testing.assert_allclose(res.outputs["C"], d(a) @ d(b), rtol=1e-4, atol=1e-4)
