"""Full reductions (a scalar result: sums, sums of squares, norms, max/min)
through the CLI against NumPy: the parallel plan's answer is at least as
accurate as NumPy's pairwise float32 sum, and `--check` scales its
tolerance with the reduction's length."""
import numpy as np
import pytest

from conftest import run_tc

SUM = "def s(float(N) X) -> (S) { S() +=! X(i) }\n"
NORM = ("def nrm(float(M,N) X) -> (R) {\n  Q() +=! X(i,j) * X(i,j)\n  R() = sqrt(Q())\n}\n"
        "def mn(float16(N) X) -> (S) { S() min=! X(i) }\n"
        "def mx(int64(N) X) -> (S) { S() max=! X(i) }\n")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("n", [1, 7, 2049, 10_000_019])
def test_sum_as_accurate_as_numpy(tmp_path, n):
    """float32 sums of values in [0, 1): the relative error against the
    exact (float64) sum is no worse than twice NumPy's own float32 sum's
    and under 1e-7 (one lane looping in float32 was at 1e-4 for 1e7)."""
    rng = np.random.default_rng()
    x = rng.random(n, dtype=np.float32)
    r = run_tc(tmp_path, write(tmp_path, "s.tc", SUM), inputs={"X": x}, outputs=["S"],
               extra=["--target", "cpu", "--check"])
    exact = np.sum(x, dtype=np.float64)
    ours = abs(float(r.outputs["S"]) - exact) / exact
    numpy = abs(float(np.sum(x)) - exact) / exact
    assert ours <= max(2 * numpy, 1e-7), f"relative error {ours:.3g}, NumPy's {numpy:.3g}"
    assert "check S:" in r.proc.stdout and ": ok" in r.proc.stdout, r.proc.stdout
    if n > 256:
        assert f"reductions of {n}" in r.proc.stdout, r.proc.stdout


def test_norm_min_max(tmp_path):
    rng = np.random.default_rng()
    prog = write(tmp_path, "n.tc", NORM)
    x = (rng.random((301, 1013), dtype=np.float32) - 0.5).astype(np.float32)
    r = run_tc(tmp_path, prog, entry="nrm", inputs={"X": x}, outputs=["R"], extra=["--target", "cpu"])
    want = np.sqrt(np.sum(x.astype(np.float64) ** 2))
    assert abs(float(r.outputs["R"]) - want) <= 1e-6 * want
    h = (rng.random(70_001) * 8 + 1).astype(np.float16)  # all positive: min is not 0
    r = run_tc(tmp_path, prog, entry="mn", inputs={"X": h}, outputs=["S"], extra=["--target", "cpu"])
    assert r.outputs["S"] == h.min()
    big = np.iinfo(np.int64)
    v = rng.integers(big.min, -1, 70_001, dtype=np.int64)  # all negative, far past 2^53
    r = run_tc(tmp_path, prog, entry="mx", inputs={"X": v}, outputs=["S"], extra=["--target", "cpu"])
    assert r.outputs["S"] == v.max()
