"""Low-bit tensors through `tessel run`: logical inputs in a wider dtype
(range-checked), --packed bytes in and out, random inputs over the whole
range, and every target's result against the packing model."""
import numpy as np
import pytest

import lowbit_model as model
from conftest import run_cli, run_tc

PROG = """
def cp(uint3(N) U) -> (Y) {
  Y(i) = U(i)
}
def widen(int5(N) I, float6e3m2(N) F, uint1(N) B) -> (Y) {
  Y(i) = float32(F(i)) * 3 + I(i) * 0.5 + B(i)
}
def quant(float32(N) X) -> (Q, R) {
  Q(i) = float4e2m1(X(i))
  R(i) = int3(X(i))
}
"""

FMT = {name: (n, x, y) for name, n, x, y in model.formats()}


def decode_all(name, codes):
    n, x, y = FMT[name]
    return np.array([model.decode(n, x, y, int(c)) for c in codes])


def pack_bits(codes, bits):
    acc = 0
    for i, c in enumerate(codes):
        acc |= int(c) << (i * bits)
    return np.frombuffer(acc.to_bytes((len(codes) * bits + 7) // 8, "little"), dtype=np.uint8)


@pytest.fixture
def prog(tmp_path):
    p = tmp_path / "lowbit.tc"
    p.write_text(PROG)
    return p


@pytest.mark.parametrize("n", [1, 2, 3, 8, 11, 37])
def test_logical_in_packed_out_and_back(tmp_path, prog, n):
    rng = np.random.default_rng()
    u = rng.integers(0, 8, n).astype(np.int64)
    # --packed reads U as bytes too: logical values are refused with a message
    r = run_tc(tmp_path, prog, entry="cp", inputs={"U": u}, sizes={"N": n}, outputs=["Y"],
               extra=["--target", "interp", "--packed"], expect_ok=False)
    assert r.proc.returncode != 0 and "uint8 bytes" in r.proc.stderr
    got = run_tc(tmp_path, prog, entry="cp", inputs={"U": u}, outputs=["Y"],
                 extra=["--target", "interp"]).outputs["Y"]
    assert got.dtype == np.uint8 and (got == u).all()
    packed = pack_bits(u, 3)
    out = run_tc(tmp_path, prog, entry="cp", inputs={"U": packed}, sizes={"N": n}, outputs=["Y"],
                 extra=["--target", "interp", "--packed"]).outputs["Y"]
    assert out.dtype == np.uint8 and (out == packed).all()


def test_out_of_range_input_names_the_element(tmp_path, prog):
    u = np.array([[0, 1], [7, 8], [9, 2]], dtype=np.int16)
    r = run_tc(tmp_path, prog, entry="cp", inputs={"U": u.reshape(-1)}, expect_ok=False,
               extra=["--target", "interp"])
    assert r.proc.returncode != 0
    assert "element (3) is 8" in r.proc.stderr and "uint3 (0..7)" in r.proc.stderr


def test_packed_input_wrong_size(tmp_path, prog):
    r = run_tc(tmp_path, prog, entry="cp", inputs={"U": np.zeros(3, np.uint8)}, sizes={"N": 11},
               expect_ok=False, extra=["--target", "interp", "--packed"])
    assert r.proc.returncode != 0 and "must be 5 uint8 bytes" in r.proc.stderr


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_widen_every_value(tmp_path, prog, target):
    rng = np.random.default_rng()
    n = 64 + 37
    i = rng.integers(-16, 16, n)
    f_codes = rng.integers(0, 64, n)
    f = decode_all("float6e3m2", f_codes).astype(np.float32)
    b = rng.integers(0, 2, n)
    got = run_tc(tmp_path, prog, entry="widen", inputs={"I": i, "F": f, "B": b}, outputs=["Y"],
                 extra=["--target", target]).outputs["Y"]
    want = f.astype(np.float64) * 3 + i * 0.5 + b
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_quantize_matches_the_model(tmp_path, prog, target):
    rng = np.random.default_rng()
    x = np.concatenate([rng.uniform(-8, 8, 200), [0.25, 0.75, 2.5, 5, 7, -7, 1e9, -1e9]]).astype(np.float32)
    out = run_tc(tmp_path, prog, entry="quant", inputs={"X": x}, outputs=["Q", "R"],
                 extra=["--target", target])
    n, e, m = FMT["float4e2m1"]
    want_q = np.array([model.decode(n, e, m, model.encode(n, e, m, float(v))) for v in x])
    assert out.outputs["Q"].dtype == np.float32
    np.testing.assert_array_equal(out.outputs["Q"], want_q)
    want_r = np.clip(np.trunc(x.astype(np.float64)), -4, 3)
    np.testing.assert_array_equal(out.outputs["R"], want_r)


def test_random_inputs_cover_the_range(tmp_path, prog):
    r = run_cli("run", prog, "--entry", "cp", "--size", "N=4000", "--target", "interp")
    assert r.returncode == 0, r.stderr
    assert "min 0 max 7" in r.stdout
