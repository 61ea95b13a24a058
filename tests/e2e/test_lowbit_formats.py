"""Every value of every low-bit format: tessel's one conversion (called
through tsl_pack / tsl_unpack in libtessel.so) against the independent
model in lowbit_model.py, the model against ml_dtypes where ml_dtypes has
the format, the packed bit order, and docs/lowbit.md against the model."""
import ctypes
import math
import random
import struct

import numpy as np
import pytest

import lowbit_model as model
from conftest import ROOT

LIB = ROOT / "build" / "libtessel.so"


@pytest.fixture(scope="module")
def lib():
    if not LIB.exists():
        pytest.fail(f"{LIB} is missing: build it with `make`")
    so = ctypes.CDLL(str(LIB))
    so.tsl_pack.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_double), ctypes.c_int64,
                            ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)]
    so.tsl_unpack.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.POINTER(ctypes.c_double)]
    so.tsl_dtype_name.restype = ctypes.c_char_p
    so.tsl_dtype_nbytes.restype = ctypes.c_size_t
    so.tsl_dtype_nbytes.argtypes = [ctypes.c_int, ctypes.c_int64]
    return so


def dtype_code(lib, name):
    for t in range(200):
        n = lib.tsl_dtype_name(t)
        if n == b"?":
            break
        if n.decode() == name:
            return t
    pytest.fail(f"tessel has no dtype {name}")


def pack(lib, t, values):
    vals = (ctypes.c_double * max(len(values), 1))(*values)
    nb = lib.tsl_dtype_nbytes(t, len(values))
    out = (ctypes.c_uint8 * max(nb, 1))()
    bad = ctypes.c_int64(-1)
    st = lib.tsl_pack(t, vals, len(values), out, ctypes.byref(bad))
    return st, bytes(out)[:nb], bad.value


def unpack(lib, t, data, n):
    buf = (ctypes.c_uint8 * max(len(data), 1)).from_buffer_copy(data or b"\0")
    out = (ctypes.c_double * max(n, 1))()
    assert lib.tsl_unpack(t, buf, n, out) == 0
    return list(out)[:n]


def pack_codes(codes, bits):
    """The reference packing: element i at bits [i*bits, (i+1)*bits), LSB first."""
    acc = 0
    for i, c in enumerate(codes):
        acc |= c << (i * bits)
    nb = (len(codes) * bits + 7) // 8
    return acc.to_bytes(nb, "little")


def same(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


@pytest.mark.parametrize("name,n,x,y", model.formats())
def test_every_code_decodes_and_reencodes(lib, name, n, x, y):
    t = dtype_code(lib, name)
    codes = list(range(1 << n))
    got = unpack(lib, t, pack_codes(codes, n), len(codes))
    for c in codes:
        want = model.decode(n, x, y, c)
        assert same(got[c], want), f"{name} code {c:#x}: tessel {got[c]!r}, model {want!r}"
    # every decoded value packs back to its own code (NaN: the canonical NaN)
    st, data, _ = pack(lib, t, got)
    assert st == 0
    back = unpack(lib, t, data, len(codes))
    as_codes = [(int.from_bytes(data, "little") >> (i * n)) & ((1 << n) - 1) for i in codes]
    for c in codes:
        v = got[c]
        want = model.encode(n, x, y, v)
        assert as_codes[c] == want, f"{name}: {v!r} packs to {as_codes[c]:#x}, model {want:#x}"
        if not math.isnan(v):
            assert as_codes[c] == c, f"{name} code {c:#x} does not round-trip"
        assert same(back[c], model.decode(n, x, y, want))


def probe_values(n, x, y, count=3000):
    """Midpoints between neighbours, a float32 step either side, beyond the
    largest value, specials and random float32s across the range."""
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 1e30, -1e30, 1e-30, -1e-30]
    fin = sorted({model.decode(n, x, y, c) for c in range(1 << n)} - {math.inf, -math.inf},
                 key=lambda v: (math.isnan(v), v))
    fin = [v for v in fin if not math.isnan(v)]
    for a, b in zip(fin, fin[1:]):
        mid = (a + b) / 2
        vals += [mid, np.nextafter(np.float32(mid), np.float32(np.inf)).item(),
                 np.nextafter(np.float32(mid), np.float32(-np.inf)).item()]
    top = fin[-1]
    vals += [top * 1.0001, top * 1.5, top * 4]
    rng = random.Random(n * 100 + x)
    for _ in range(count):
        vals.append(struct.unpack("<f", struct.pack("<f", rng.uniform(-1.2, 1.2) * top))[0])
    return vals


@pytest.mark.parametrize("name,n,x,y", model.formats())
def test_encode_rounds_and_saturates_like_the_model(lib, name, n, x, y):
    t = dtype_code(lib, name)
    vals = probe_values(n, x, y)
    st, data, _ = pack(lib, t, vals)
    assert st == 0
    acc = int.from_bytes(data, "little")
    for i, v in enumerate(vals):
        got = (acc >> (i * n)) & ((1 << n) - 1)
        want = model.encode(n, x, y, v)
        assert got == want, f"{name}: {v!r} -> {got:#x}, model {want:#x}"


ML = {"float8e4m3": "float8_e4m3fn", "float8e5m2": "float8_e5m2", "float6e3m2": "float6_e3m2fn",
      "float6e2m3": "float6_e2m3fn", "float4e2m1": "float4_e2m1fn"}


@pytest.mark.parametrize("name", sorted(ML))
def test_model_matches_ml_dtypes(name):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mt = getattr(ml_dtypes, ML[name])
    _, n, x, y = next(f for f in model.formats() if f[0] == name)
    codes = np.arange(1 << n, dtype=np.uint8)
    ref = codes.view(mt).astype(np.float64) if n == 8 else codes.astype(np.uint8).view(mt).astype(np.float64)
    for c in range(1 << n):
        assert same(float(ref[c]), model.decode(n, x, y, c)), f"{name} code {c:#x}"
    # rounding inside the range (ml_dtypes differs only past the largest
    # value, where tessel saturates, and on NaN in the MX formats)
    top = max(model.decode(n, x, y, c) for c in range(1 << (n - 1))
              if math.isfinite(model.decode(n, x, y, c)))
    vals = [v for v in probe_values(n, x, y) if math.isfinite(v) and abs(v) <= top]
    got = np.array(vals, dtype=np.float32).astype(mt).view(np.uint8)
    for v, g in zip(vals, got):
        want = model.encode(n, x, y, v)
        assert int(g) == want, f"{name}: ml_dtypes {v!r} -> {int(g):#x}, model {want:#x}"


INTS = [(f"uint{b}", b, False) for b in range(1, 9)] + [(f"int{b}", b, True) for b in range(2, 9)]


@pytest.mark.parametrize("name,bits,signed", INTS)
def test_integers_every_value_and_range_check(lib, name, bits, signed):
    t = dtype_code(lib, name)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    vals = [float(v) for v in range(lo, hi + 1)] * 3
    random.Random(bits).shuffle(vals)
    st, data, _ = pack(lib, t, vals)
    assert st == 0
    codes = [int(v) & ((1 << bits) - 1) for v in vals]
    assert data == pack_codes(codes, bits)
    assert unpack(lib, t, data, len(vals)) == vals
    for bad in (hi + 1, lo - 1, 0.5):
        st, _, where = pack(lib, t, [float(lo), float(hi), float(bad), float(lo)])
        assert st != 0 and where == 2, f"{name}: {bad} accepted (status {st}, index {where})"


def test_docs_table_matches_the_model():
    doc = (ROOT / "docs" / "lowbit.md").read_text()
    assert model.table_markdown().strip() in doc, \
        "docs/lowbit.md's value table is stale: regenerate it with tests/e2e/lowbit_model.py"
