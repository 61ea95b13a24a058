"""docs/language.md "Arithmetic and conversions", end to end: the reference
interpreter and the CPU target give exactly the answer the definition
gives, modelled here in NumPy.
- float -> integer casts truncate toward zero and saturate to the type's
  range; NaN gives 0; -> bool is `x != 0` (NaN true). Before, the
  interpreter saturated while the CPU target gave 0 (or wrapped, uint8).
- float32 expressions compute in float32: each operation's result is
  rounded to float32, so the interpreter agrees bit for bit with NumPy's
  float32 arithmetic (it used to compute in float64 and round once when
  stored), and int32(erf(4)) is 1 on every target (it was 0 on the
  interpreter, 1 on the CPU).
Inputs are fresh random values spread over many magnitudes, plus the edge
values (NaN, +-inf, exact integers, values just past each type's range).
The casts run on CUDA too where a device is present (bench/gpu.sh)."""
import numpy as np
import pytest

from conftest import run_tc
from test_cuda_target import gpu_present

INT_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
NAMES = {t: f"O_{t}" for t in INT_TYPES}

CASTS_TC = "def casts(float(N) A) -> ({}, OB, OE) {{\n{}\n  OB(i) = bool(A(i))\n  OE(i) = int32(erf(A(i)))\n}}\n".format(
    ", ".join(NAMES.values()),
    "\n".join(f"  {NAMES[t]}(i) = {t}(A(i))" for t in INT_TYPES))


def saturate(x, dtype):
    """The definition: truncate toward zero, saturate, NaN -> 0 (in float64,
    where every float32 input is exact)."""
    info = np.iinfo(dtype)
    t = np.trunc(x.astype(np.float64))
    out = np.zeros(x.shape, dtype=dtype)
    ok = ~np.isnan(t)
    lo, hi = float(info.min), float(info.max)
    below, above = ok & (t <= lo), ok & (t >= hi)
    mid = ok & ~below & ~above
    out[below] = info.min
    out[above] = info.max
    out[mid] = t[mid].astype(dtype)
    return out


def edge_inputs(rng):
    edges = [np.nan, np.inf, -np.inf, 0.0, -0.0, 4.0, 3.95, -4.0, 0.5, -0.5, 1.9, -1.9, 127.5, 128.0,
             -128.5, -129.0, 255.9, 256.0, 300.5, -3.7, 32767.9, 32768.0, -32769.0, 65536.0,
             2.0**31, -2.0**31, -2.0**31 - 512, 2.0**32, 2.0**63, -2.0**63, -2.0**64, 2.0**64, 1e10, -1e10,
             1e30, -1e30]
    mag = 10.0 ** rng.uniform(-3, 22, size=251)
    rnd = mag * rng.choice([-1.0, 1.0], size=mag.size)
    return np.concatenate([np.array(edges), rnd]).astype(np.float32)


@pytest.mark.parametrize("target", ["interp", "cpu", "cuda"])
def test_float_to_integer_casts(tmp_path, rng, target):
    if target == "cuda" and not gpu_present():
        pytest.skip("no CUDA device (bench/gpu.sh runs this on the GPU)")
    (tmp_path / "casts.tc").write_text(CASTS_TC)
    a = edge_inputs(rng)
    outs = list(NAMES.values()) + ["OB", "OE"]
    res = run_tc(tmp_path, str(tmp_path / "casts.tc"), inputs={"A": a}, outputs=outs, extra=["--target", target])
    for t in INT_TYPES:
        got, want = res.outputs[NAMES[t]], saturate(a, np.dtype(t))
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, f"{target} {t}: A={a[bad[:5]]} gave {got[bad[:5]]}, want {want[bad[:5]]}"
    np.testing.assert_array_equal(res.outputs["OB"], (a != 0) | np.isnan(a))
    # erf(x) rounds to 1.0f from about 3.92 on: erf(4) is 1 in float32
    e = res.outputs["OE"]
    assert e[list(a).index(np.float32(4.0))] == 1 and e[list(a).index(np.float32(-4.0))] == -1
    big = np.abs(a) >= 4
    np.testing.assert_array_equal(e[big], np.sign(a[big]).astype(np.int32))


# Integer constants: a cast wraps to its width (uint16(-1) was -1 on the
# cpu and cuda targets) and two literals combine in the wider type
# (1 + 4294967296 was int32 and gave 1).
CONST_TC = """def k(int32(N) X, float(N) A) -> (Y, Z, W, L) {
  Y(i) = X(i) + uint16(-1)
  Z(i) = A(i) + uint8(-255) + int8(300)
  W(i) = X(i) + int8(N * 100) + uint32(-1)
  L(i) = 1 + 4294967296 where i in 0:N
}
"""


@pytest.mark.parametrize("target", ["interp", "cpu", "cuda"])
def test_integer_constants(tmp_path, rng, target):
    if target == "cuda" and not gpu_present():
        pytest.skip("no CUDA device (bench/gpu.sh runs this on the GPU)")
    (tmp_path / "k.tc").write_text(CONST_TC)
    n = 7
    x = rng.integers(-1000, 1000, size=n).astype(np.int32)
    a = rng.uniform(-1, 1, size=n).astype(np.float32)
    res = run_tc(tmp_path, str(tmp_path / "k.tc"), inputs={"X": x, "A": a}, outputs=["Y", "Z", "W", "L"],
                 extra=["--target", target])
    np.testing.assert_array_equal(res.outputs["Y"], x + 65535)
    np.testing.assert_array_equal(res.outputs["Z"], a + np.float32(1) + np.float32(44))
    # int8(700) = -68; uint32(-1) with int32 promotes to int64
    np.testing.assert_array_equal(res.outputs["W"], x.astype(np.int64) - 68 + 4294967295)
    assert res.outputs["L"].dtype == np.int64
    np.testing.assert_array_equal(res.outputs["L"], np.full(n, 4294967297, dtype=np.int64))


F32_TC = """def f(float(N) A, float(N) B) -> (C, D, E) {
  C(i) = A(i) * A(i) + B(i) * 3 - sqrt(abs(B(i))) * 1.1
  D(i) = (A(i) + B(i)) * (A(i) - B(i)) / (B(i) * B(i) + 0.7)
  E(i) = int32((A(i) * 1000 + B(i)) / B(i))
}
"""


@pytest.mark.parametrize("n", [1, 7, 1009])
def test_float32_rounds_every_operation(tmp_path, rng, n):
    """The interpreter is the oracle: bit for bit NumPy's float32, every
    operation rounded (sqrt and the four operations are correctly rounded
    in both). The CPU target's `/` by a row scalar may be a multiply by
    its reciprocal, so it is compared where no such division occurs."""
    (tmp_path / "f.tc").write_text(F32_TC)
    a = rng.uniform(-3, 3, n).astype(np.float32)
    b = rng.uniform(0.25, 3, n).astype(np.float32) * rng.choice([-1, 1], n).astype(np.float32)
    f = np.float32
    c = a * a + b * f(3) - np.sqrt(np.abs(b)) * f(1.1)
    d = (a + b) * (a - b) / (b * b + f(0.7))
    with np.errstate(invalid="ignore"):
        e = saturate((a * f(1000) + b) / b, np.dtype(np.int32))
    for target in ["interp", "cpu"]:
        res = run_tc(tmp_path, str(tmp_path / "f.tc"), inputs={"A": a, "B": b}, outputs=["C", "D", "E"],
                     extra=["--target", target])
        for name, want in (("C", c), ("D", d), ("E", e)):
            got = res.outputs[name]
            bad = np.nonzero(got != want)[0]
            assert bad.size == 0, f"{target} {name}: at {bad[:5]} got {got[bad[:5]]} want {want[bad[:5]]}"
