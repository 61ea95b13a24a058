"""`tessel run --input` of another dtype than the parameter's: a conversion
that would change a value is an error for an integer parameter (an index
tensor gathered through would silently read another row: 1.9 became 1, NaN
0, 2^63 and 2^32 + 1 wrapped), naming the tensor, the first such element
and its value; into a float parameter the values that round are counted in
a warning. `--set` of an integer scalar out of its dtype's range is an
error too."""
import numpy as np
import pytest

from conftest import run_tc

GATHER32 = """def gather32(float(N) X, int32(A,B) I) -> (Z) {
  Z(i,j) = X(I(i,j))
}
"""

SHIFT = """def shift(float(N) X, int32 k) -> (Y) {
  Y(i) = X(i) + k
}
"""


def indices(rng, shape, n, dtype):
    return rng.integers(0, n, size=shape).astype(dtype)


@pytest.mark.parametrize("bad,dtype,says", [
    (np.nan, np.float32, "is nan, not an integer value of int64"),
    (np.inf, np.float64, "is inf, not an integer value of int64"),
    (1e30, np.float64, "is 1e+30, outside the range of int64"),
    (-0.5, np.float32, "is -0.5, not an integer value of int64"),
    (1.9, np.float64, "is 1.9, not an integer value of int64"),
    (2**63, np.uint64, "is 9223372036854775808, outside the range of int64"),
])
@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_lossy_index_tensor_is_an_error(tmp_path, rng, bad, dtype, says, target):
    x = rng.uniform(-1, 1, size=7).astype(np.float32)
    idx = indices(rng, (3, 5), 7, dtype)
    r, c = int(rng.integers(0, 3)), int(rng.integers(0, 5))
    idx[r, c] = bad
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": x, "I": idx}, outputs=["Z"],
                 extra=["--target", target], expect_ok=False)
    assert res.proc.returncode == 1, res.proc.stdout + res.proc.stderr
    err = res.proc.stderr
    assert f"input I from '{tmp_path / 'in_I.npy'}': element ({r}, {c}) {says}" in err, err
    assert not (tmp_path / "out_Z.npy").exists()


def test_int64_past_int32_is_an_error(tmp_path, rng):
    (tmp_path / "g.tc").write_text(GATHER32)
    x = rng.uniform(-1, 1, size=11).astype(np.float32)
    idx = indices(rng, (2, 3), 11, np.int64)
    idx[1, 2] = 2**32 + 1  # wrapped, it is index 1
    res = run_tc(tmp_path, str(tmp_path / "g.tc"), inputs={"X": x, "I": idx}, outputs=["Z"], expect_ok=False)
    assert res.proc.returncode == 1
    assert "element (1, 2) is 4294967297, outside the range of int32 (-2147483648..2147483647)" in res.proc.stderr


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.uint64, np.int8, np.uint16])
def test_exact_index_conversion_runs(tmp_path, rng, dtype):
    x = rng.uniform(-1, 1, size=13).astype(np.float32)
    idx = indices(rng, (4, 3), 13, dtype)
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": x, "I": idx}, outputs=["Z"],
                 extra=["--target", "cpu", "--check"])
    assert f"note: input I converted from {np.dtype(dtype).name} to int64" in res.proc.stderr
    np.testing.assert_array_equal(res.outputs["Z"], x[idx.astype(np.int64)])


def test_rounded_float_input_is_counted(tmp_path, rng):
    x = rng.uniform(-1, 1, size=29)  # float64: almost every value rounds
    x[3] = 0.5
    x[7] = 1e300  # becomes inf
    idx = indices(rng, (2, 2), 29, np.int64)
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": x, "I": idx}, outputs=["Z"])
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32)
    changed = int(np.sum(x32.astype(np.float64) != x))
    first = int(np.nonzero(x32.astype(np.float64) != x)[0][0])
    want = f"warning: input X converted from float64 to float32: {changed} of 29 values changed (the first: element ({first}),"
    assert want in res.proc.stderr, res.proc.stderr
    np.testing.assert_array_equal(res.outputs["Z"], x32[idx])


@pytest.mark.parametrize("value,says", [
    ("4294967297", "outside the range of int32"),
    ("-2147483649", "outside the range of int32"),
    ("2.5", "needs an integer"),
])
def test_integer_scalar_out_of_range(tmp_path, rng, value, says):
    (tmp_path / "s.tc").write_text(SHIFT)
    x = rng.uniform(-1, 1, size=5).astype(np.float32)
    res = run_tc(tmp_path, str(tmp_path / "s.tc"), inputs={"X": x}, outputs=["Y"], expect_ok=False,
                 extra=["--set", f"k={value}"])
    assert res.proc.returncode == 1
    assert f"--set k={value}: " in res.proc.stderr and says in res.proc.stderr, res.proc.stderr
    k = int(rng.integers(-1000, 1000))
    res = run_tc(tmp_path, str(tmp_path / "s.tc"), inputs={"X": x}, outputs=["Y"], extra=["--set", f"k={k}"])
    np.testing.assert_array_equal(res.outputs["Y"], x + np.float32(k))
