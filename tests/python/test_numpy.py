"""The Python package on NumPy arrays (CPU target): results against NumPy,
zero-copy checked by pointer identity, in/out and out=, every NumPy dtype
tessel has, non-contiguous views, errors with their locations, many threads
calling one function."""
import concurrent.futures as cf
import re

import numpy as np
import pytest

import tessel
from pyhelpers import rand

MM = """def mm(float(M,K) A, float(K,N) B) -> (C) {
  C(m,n) +=! A(m,k) * B(k,n)
}"""
SIZES = [1, 2, 7, 13, 31, 64, 97]


def ptr(a):
    return a.__array_interface__["data"][0]


def poisoned(shape, dtype="float32"):
    a = np.empty(shape, dtype)
    a.fill(np.nan if np.dtype(dtype).kind == "f" else 99)
    return a


@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (7, 13, 5), (31, 2, 97), (64, 17, 33)])
def test_matmul(rng, M, K, N):
    f = tessel.compile(MM)
    A, B = rand(rng, (M, K)), rand(rng, (K, N))
    C = f(A, B)
    assert isinstance(C, np.ndarray) and C.shape == (M, N) and C.dtype == np.float32
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    # by name, any order
    np.testing.assert_array_equal(f(B=B, A=A), C)
    np.testing.assert_array_equal(f(A, B=B), C)


def test_out_is_written_in_place(rng):
    f = tessel.compile(MM)
    A, B = rand(rng, (13, 7)), rand(rng, (7, 31))
    C = poisoned((13, 31))
    p = ptr(C)
    r = f(A, B, out=C)
    assert r is C and ptr(C) == p
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    # a dict by name, and a one-tuple
    C2 = poisoned((13, 31))
    assert f(A, B, out={"C": C2}) is C2 and f(A, B, out=(C2,)) is C2
    np.testing.assert_array_equal(C2, C)


def test_inputs_are_read_in_place(rng):
    """The kernel reads the caller's memory: an in/out tensor is updated at
    its own address, and a view into a bigger buffer changes only the view."""
    inc = tessel.compile("def inc(float(N) Y, float d) -> (Y) { Y(i) += d }")
    buf = rand(rng, 40)
    before = buf.copy()
    view = buf[5:30]
    p = ptr(view)
    r = inc(view, 0.5)
    assert r is view and ptr(view) == p
    np.testing.assert_allclose(buf[5:30], before[5:30] + 0.5, rtol=1e-6)
    np.testing.assert_array_equal(buf[:5], before[:5])
    np.testing.assert_array_equal(buf[30:], before[30:])


def test_several_outputs_and_scalars(rng):
    f = tessel.compile("""
def stats(float(N,C) X, float a, int32 k) -> (S, T, X) {
  S(n) +=! X(n,c) * a
  T(n,c) = X(n,c) + k
  X(n,c) = X(n,c) * 2
}""")
    X = rand(rng, (13, 5))
    X0 = X.copy()
    S, T, Xr = f(X, 0.25, k=3)
    assert Xr is X
    np.testing.assert_allclose(S, (X0 * 0.25).sum(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(T, X0 + 3, rtol=1e-6)
    np.testing.assert_allclose(X, X0 * 2, rtol=1e-6)
    # out= as a tuple with None entries allocated
    X = X0.copy()
    T = poisoned((13, 5))
    S2, T2, _ = f(X, a=1.5, k=np.int64(-2), out=(None, T, None))
    assert T2 is T
    np.testing.assert_allclose(T, X0 - 2, rtol=1e-6)
    np.testing.assert_allclose(S2, (X0 * 1.5).sum(1), rtol=1e-5, atol=1e-6)


# every NumPy dtype tessel has (bfloat16: NumPy has none; see test_torch.py)
FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_every_dtype(rng, dt):
    f = tessel.compile(f"""
def f({dt}(N,K) A, {dt}(N,K) B) -> (C, S) {{
  C(n,k) = A(n,k) * B(n,k) + A(n,k)
  S(n) +=! A(n,k)
}}""")
    N, K = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    lo, hi = (0, 10) if dt.startswith("u") else (-10, 10)
    A, B = rand(rng, (N, K), dt, lo, hi), rand(rng, (N, K), dt, lo, hi)
    C, S = f(A, B)
    assert C.dtype == np.dtype(dt) and S.dtype == np.dtype(dt) and C.shape == (N, K) and S.shape == (N,)
    if dt in FLOATS:
        tol = 2e-2 if dt == "float16" else 1e-5
        A64, B64 = A.astype(np.float64), B.astype(np.float64)
        np.testing.assert_allclose(C.astype(np.float64), A64 * B64 + A64, rtol=tol, atol=tol)
        np.testing.assert_allclose(S.astype(np.float64), A64.sum(1), rtol=tol, atol=tol * K)
    else:  # wraps as NumPy does
        np.testing.assert_array_equal(C, A * B + A)
        np.testing.assert_array_equal(S, A.sum(1, dtype=np.dtype(dt)))


def test_bool(rng):
    f = tessel.compile("""
def f(bool(N) A, bool(N) B, float(N) X) -> (C, Y) {
  C(i) = A(i) && !B(i)
  Y(i) = A(i) ? X(i) : -X(i)
}""")
    N = 37
    A, B, X = rand(rng, N, "bool"), rand(rng, N, "bool"), rand(rng, N)
    C, Y = f(A, B, X)
    assert C.dtype == np.bool_
    np.testing.assert_array_equal(C, A & ~B)
    np.testing.assert_array_equal(Y, np.where(A, X, -X))


@pytest.mark.parametrize("view", ["transposed", "stepped", "reversed", "offset", "broadcast"])
def test_noncontiguous_inputs(rng, view):
    f = tessel.compile(MM)
    M, K, N = 13, 7, 5
    A = rand(rng, (M, K))
    if view == "transposed":
        Av = np.asfortranarray(A)            # column-major storage
        assert not Av.flags.c_contiguous
    elif view == "stepped":
        big = rand(rng, (2 * M, 3 * K))
        big[::2, ::3] = A
        Av = big[::2, ::3]
    elif view == "reversed":                 # negative strides
        Av = A[::-1, ::-1].copy()[::-1, ::-1]
        assert Av.strides[0] < 0
    elif view == "offset":
        big = rand(rng, (M + 3, K + 2))
        big[3:, 2:] = A
        Av = big[3:, 2:]
    else:                                     # stride 0, read-only
        row = rand(rng, (1, K))
        A = np.repeat(row, M, 0)
        Av = np.broadcast_to(row, (M, K))
        assert Av.strides[0] == 0 and not Av.flags.writeable
    np.testing.assert_array_equal(Av, A)
    B = rand(rng, (K, N))
    np.testing.assert_allclose(f(Av, B), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)


def test_noncontiguous_output_and_inout(rng):
    f = tessel.compile(MM)
    A, B = rand(rng, (13, 7)), rand(rng, (7, 11))
    store = poisoned((11, 13))
    Ct = store.T                              # a (13, 11) view with strides (4, 52)
    assert f(A, B, out=Ct) is Ct
    np.testing.assert_allclose(store.T, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    inc = tessel.compile("def inc(float(N,K) Y) -> (Y) { Y(i,j) += 1 }")
    big = rand(rng, (9, 8))
    before = big.copy()
    inc(big[::2, 1::3])
    expect = before.copy()
    expect[::2, 1::3] += 1
    np.testing.assert_allclose(big, expect, rtol=1e-6)


def test_zero_size(rng):
    f = tessel.compile("def sc(float(N) X) -> (Y) { Y(i) = X(i) * 2 }")
    Y = f(np.zeros(0, np.float32))
    assert Y.shape == (0,)


def test_size_symbol_by_name(rng):
    f = tessel.compile("def bc(float(N) A) -> (O) {\n  O(i,j) = A(i) where j in 0:R\n}")
    A = rand(rng, 5)
    O = f(A, R=3)
    np.testing.assert_array_equal(O, np.repeat(A[:, None], 3, 1))
    assert f(A, R=1).shape == (5, 1)


def test_interp_target_matches(rng):
    src = "def g(float(N) X, float a) -> (Y) { Y(i) = tanh(X(i)) * a }"
    X = rand(rng, 29)
    y1 = tessel.compile(src)(X, 1.5)
    y2 = tessel.compile(src, target="interp")(X, 1.5)
    np.testing.assert_allclose(y1, np.tanh(X.astype(np.float64)) * 1.5, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y2, y1, rtol=1e-5, atol=1e-6)


def test_entry_and_files(tmp_path):
    two = "def f(float(N) A) -> (B) { B(i) = A(i) }\ndef g(float(N) A) -> (B) { B(i) = A(i) * 2 }\n"
    with pytest.raises(tessel.ArgumentError, match=r"2 defs \(f, g\)"):
        tessel.compile(two)
    g = tessel.compile(two, entry="g")
    assert g.name == "g"
    np.testing.assert_array_equal(g(np.ones(3, np.float32)), [2, 2, 2])
    p = tmp_path / "bad.tc"
    p.write_text("def f(float(N) A) -> (B) {\n  B(i) = A(j)\n}\n")
    with pytest.raises(tessel.CompileError) as e:
        tessel.compile_file(p)
    assert f"{p}:2:" in str(e.value)


# ---- errors: a tessel.Error with the full diagnostic, never a crash -------

def test_compile_error_location():
    with pytest.raises(tessel.CompileError) as e:
        tessel.compile("def f(float(N) A) -> (B) {\n  B(i) = A(i) +* 2\n}\n", filename="mine.tc")
    msg = str(e.value)
    assert re.search(r"mine\.tc:2:\d+: error: ", msg), msg
    assert "B(i) = A(i) +* 2" in msg and "^" in msg
    assert e.value.status == "TSL_ERR_SYNTAX"
    with pytest.raises(tessel.CompileError, match=r"<tc>:2:\d+: error: .*'k'"):
        tessel.compile("def f(float(N) A) -> (B) {\n  B(i) = A(k) + A(i)\n}")


def test_call_errors(rng):
    f = tessel.compile(MM)
    A, B = rand(rng, (3, 4)), rand(rng, (5, 6))
    with pytest.raises(tessel.ShapeError, match=r"size K is 4 from A dim 1 but 5 from B dim 0"):
        f(A, B)
    with pytest.raises(ValueError):           # ShapeError is a ValueError
        f(A, B)
    with pytest.raises(tessel.ArgumentError, match=r"parameter 'A' is float32 but the tensor given is float64"):
        f(A.astype(np.float64), rand(rng, (4, 2)))
    with pytest.raises(tessel.ShapeError, match=r"'A' has rank 2 .* rank 1"):
        f(rand(rng, 3), B)
    with pytest.raises(TypeError, match=r"missing argument: 'B'"):
        f(A)
    with pytest.raises(tessel.ArgumentError, match=r"takes 2 arguments"):
        f(A, B, B)
    with pytest.raises(tessel.ArgumentError, match=r"multiple values for argument 'A'"):
        f(A, A=A)
    with pytest.raises(tessel.ArgumentError, match=r"no parameter or output named 'Q'"):
        f(A, rand(rng, (4, 2)), Q=3)
    with pytest.raises(tessel.ArgumentError, match=r"parameter 'A' must be a tensor"):
        f(1.0, B)
    with pytest.raises(tessel.ArgumentError, match=r"must be a NumPy array"):
        f([[1.0]], B)
    with pytest.raises(tessel.ArgumentError, match=r"object is not a tessel dtype"):
        f(np.empty((3, 4), object), B)
    with pytest.raises(tessel.ShapeError, match=r"output 'C' has shape \(3, 2\) but the tensor given has shape \(2, 3\)"):
        f(A, rand(rng, (4, 2)), out=np.empty((2, 3), np.float32))
    ro = np.empty((3, 2), np.float32)
    ro.flags.writeable = False
    with pytest.raises(tessel.ArgumentError, match=r"read-only"):
        f(A, rand(rng, (4, 2)), out=ro)
    with pytest.raises(tessel.ArgumentError, match=r"shares memory"):
        g = tessel.compile("def g(float(N) X) -> (Y) { Y(i) = X(i) + 1 }")
        X = rand(rng, 8)
        g(X, out=X)
    s = tessel.compile("def s(float(N) X, float a) -> (Y) { Y(i) = X(i) * a }")
    with pytest.raises(tessel.ArgumentError, match=r"parameter 'a' is a scalar"):
        s(rand(rng, 3), "x")
    with pytest.raises(tessel.ArgumentError, match=r"target must be"):
        tessel.compile(MM, target="gpu")
    with pytest.raises(tessel.ArgumentError, match=r"unknown emit kind 'sass'"):
        f.emit("sass")


def test_gather_bounds_error(rng):
    f = tessel.compile("def gather(float(N) X, int32(M) I) -> (Y) {\n  Y(i) = X(I(i))\n}", filename="g.tc")
    X = rand(rng, 5)
    I = np.array([0, 4, 7, 1], np.int32)
    with pytest.raises(tessel.BoundsError) as e:
        f(X, I)
    assert "g.tc:2:" in str(e.value) and "7" in str(e.value)
    I[2] = 2
    np.testing.assert_array_equal(f(X, I), X[I])


def test_cuda_without_gpu(rng):
    from pyhelpers import has_gpu
    if has_gpu():
        pytest.skip("a GPU is present")
    f = tessel.compile(MM, target="cuda")
    with pytest.raises(tessel.UnavailableError, match=r"target 'cuda' is unavailable"):
        f(rand(rng, (2, 2)), rand(rng, (2, 2)))


# ---- threads -----------------------------------------------------------------

def test_many_threads_one_function(rng):
    f = tessel.compile("def axpy(float(N) X, float a, float(N) Y) -> (Z) { Z(i) = a * X(i) + Y(i) }")
    jobs = []
    for t in range(64):
        n = int(rng.integers(1, 300))
        jobs.append((rand(rng, n), float(rng.uniform(-2, 2)), rand(rng, n)))

    def work(job):
        X, a, Y = job
        for _ in range(5):
            Z = f(X, a, Y)
            if not np.allclose(Z, np.float32(a) * X + Y, rtol=1e-5, atol=1e-6):
                return "wrong"
        try:
            f(X, a, rand(np.random.default_rng(), len(X) + 1))
        except tessel.ShapeError as e:
            return "ok" if f"{len(X) + 1} from Y dim 0" in str(e) else f"other thread's error: {e}"
        return "no error"

    with cf.ThreadPoolExecutor(8) as ex:
        results = list(ex.map(work, jobs))
    assert results == ["ok"] * len(jobs)


# ---- introspection, emit, layout, help ------------------------------------

def test_introspection_and_emit():
    f = tessel.compile(MM)
    assert [p.name for p in f.params] == ["A", "B"] and f.params[0].dims == ("M", "K")
    assert [o.name for o in f.outputs] == ["C"]
    assert f.output_shapes((3, 4), (4, 5)) == [((3, 5), "float32")]
    assert "C(m, n)" in f.emit("ast") or "C(m,n)" in f.emit("ast")
    for what in ["ranges", "graph", "tile", "tile:cuda", "c", "cuda", "expand", "select", "source",
                 "plan", "plan:cuda", "plan:cuda:sm_90a"]:
        assert len(f.emit(what)) > 20, what
    assert "launch 0:" in f.emit("plan") and "tsl_cuda_" in f.emit("plan:cuda")
    assert "void" in f.emit("c")
    try:
        assert ".entry" in f.emit("ptx")
    except tessel.UnavailableError:
        pass
    assert "mm" in repr(f) and "float32(M,K) A" in repr(f)


def test_options(rng):
    """Options as text or a dict: the canonical text back, results still
    right (small blocks, one thread, sizes no block divides), bad ones
    named."""
    space = tessel.options_space()
    assert "contract.cpu.bm" in space and "cpu.threads" in space
    assert tessel.compile(MM).options == ""
    f = tessel.compile(MM, options={"contract.cpu.bm": 48, "contract.cpu.bn": 32, "cpu.threads": 1},
                       target="cpu")
    g = tessel.compile(MM, options="cpu.threads=1,contract.cpu.bn=32,contract.cpu.bm=48", target="cpu")
    assert f.options == g.options and "contract.cpu.bm=48" in f.options and "cpu.threads=1" in f.options
    A, B = rand(rng, (37, 19)), rand(rng, (19, 23))
    np.testing.assert_allclose(f(A, B), A.astype(np.float64) @ B, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g(A, B), A.astype(np.float64) @ B, rtol=1e-4, atol=1e-5)
    with pytest.raises(tessel.ArgumentError, match="contract.cpu.bogus"):
        tessel.compile(MM, options="contract.cpu.bogus=3")
    with pytest.raises(tessel.ArgumentError, match="cpu.threads"):
        tessel.compile(MM, options={"cpu.threads": "many"})
    with pytest.raises(tessel.ArgumentError, match="options must be"):
        tessel.compile(MM, options=42)
    h = tessel.compile(MM, options={"contract.cpu.bm": 16}, target="cpu")  # known, but 16 rows % 6
    with pytest.raises(tessel.ArgumentError, match="not a whole number"):
        h(A, B)


def test_allow_tf32(rng):
    """allow_tf32 is off by default, shows in f.options (the cache key's
    text) when on, is kept when options are set, and leaves the CPU's f32
    exact; a non-bool is refused."""
    assert tessel.compile(MM).options == ""
    f = tessel.compile(MM, allow_tf32=True, target="cpu")
    assert f.options == "allow_tf32=1"
    g = tessel.compile(MM, allow_tf32=True, options={"cpu.threads": 1}, target="cpu")
    assert g.options == "cpu.threads=1,allow_tf32=1"
    A, B = rand(rng, (29, 13)), rand(rng, (13, 7))
    np.testing.assert_allclose(f(A, B), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-6)
    with pytest.raises(tessel.ArgumentError, match="allow_tf32 must be a bool"):
        tessel.compile(MM, allow_tf32=1)


def test_bench(rng):
    f = tessel.compile(MM)
    A, B = rand(rng, (17, 5)), rand(rng, (5, 3))
    C = np.full((17, 3), np.nan, np.float32)
    ms = f.bench(A, B, out=C, reps=7)
    assert 0 < ms < 1000
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-6)  # the calls ran
    with pytest.raises(tessel.ArgumentError, match="reps"):
        f.bench(A, B, reps=0)


def test_tune(rng):
    """A short tuning session from Python: candidates checked and timed, a
    progress line per generation, the pick recorded; later calls at those
    shapes (prime sizes no block divides) still give NumPy's answer; bad
    arguments named."""
    f = tessel.compile(MM, target="cpu")
    A, B = rand(rng, (67, 45)), rand(rng, (45, 53))
    lines = []
    r = f.tune(A, B, budget=60, generations=2, population=4, progress=lines.append)
    assert isinstance(r, tessel.TuneResult)
    assert r.tried >= 4 and r.tried >= r.failed and r.generations >= 1 and r.recorded
    assert r.default_ms > 0 and 0 < r.best_ms <= r.default_ms * 1.5
    assert len(lines) >= 1 and all(line.startswith("tune mm cpu") for line in lines)
    C = poisoned((67, 53))
    f(A, B, out=C)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-5)
    with pytest.raises(tessel.ArgumentError, match="search"):
        f.tune(A, B, search="annealing")
    with pytest.raises(tessel.ArgumentError, match="budget"):
        f.tune(A, B, budget=0)
    with pytest.raises(tessel.ArgumentError, match="missing"):
        f.tune(A)


def test_layout():
    t = tessel.layout("(2,3):(3,1)")
    assert "size=6 cosize=6" in t and " 1 | 3 | 4 | 5 |" in t
    j = tessel.layout("(2,3):(3,1)", json=True)
    assert j["map"] == [0, 3, 1, 4, 2, 5] and j["kind"] == "data"
    d = tessel.layout("local(2,1).spatial(8,4)", json=True)
    assert d["kind"] == "distributed" and d["threads"] == 32
    with pytest.raises(tessel.CompileError) as e:
        tessel.layout("(4,(2")
    assert "<layout>:1:" in str(e.value) and "^" in str(e.value)


def test_help_is_a_tutorial():
    import doctest
    doc = tessel.__doc__
    for heading in ["A first function", "Outputs and in-place updates", "Errors", "PyTorch"]:
        assert heading in doc
    failed, tried = doctest.testmod(tessel, verbose=False)
    assert tried >= 5 and failed == 0
    assert tessel.compile.__doc__ and tessel.Function.__call__ and tessel.layout.__doc__


class Producer:
    """A minimal DLPack producer that is neither NumPy nor torch."""

    def __init__(self, a):
        self.a = a
        self.shape = a.shape

    def __dlpack__(self, stream=None, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_any_dlpack_producer(rng):
    f = tessel.compile(MM)
    A, B = rand(rng, (5, 3)), rand(rng, (3, 4))
    C = f(Producer(A), Producer(B))
    assert isinstance(C, np.ndarray)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-6)
    out = poisoned((5, 4))
    f(Producer(A), B, out=Producer(out))
    np.testing.assert_allclose(out, C, rtol=1e-6)


def test_junk_never_crashes(rng):
    """Whatever is passed, the answer is a tessel.Error (or the TypeError a
    Python function would raise), never a crash."""
    f = tessel.compile("def f(float(N,K) A, float a) -> (B) { B(n,k) = A(n,k) * a }")
    good = rand(rng, (3, 2))
    junk = [None, 1, 2.5, "x", b"x", [1.0], {}, object(), np.float32(1), np.zeros((), np.float32),
            np.zeros((2, 2, 2), np.float32), np.zeros((3, 2), np.complex64), np.zeros((3, 2), "U1"),
            np.zeros((3, 2), np.float64), np.zeros((0, 5), np.float32), np.zeros((1,) * 9, np.float32),
            good.T, good[::-1], float("nan")]
    for x in junk:
        for call in (lambda: f(x, 1.0), lambda: f(good, x), lambda: f(good, 1.0, out=x),
                     lambda: f(A=x, a=x), lambda: f(good, 1.0, out=(x,)), lambda: f(good, 1.0, out={"B": x})):
            try:
                call()
            except (tessel.Error, TypeError):
                pass
    for src in ["", "def", "def f(", "\x00", "def f(float(N) A) -> (B) { B(i) = A(i) " * 50]:
        with pytest.raises((tessel.Error, TypeError)):
            tessel.compile(src)
    with pytest.raises(tessel.ArgumentError):
        tessel.compile(b"def f(float(N) A) -> (B) { B(i) = A(i) }")
    for e in ["", "(", "((((((((((", "local(0)", "compose(1,2,3)", "x" * 10000]:
        with pytest.raises(tessel.Error):
            tessel.layout(e)
