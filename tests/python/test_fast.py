"""The generated fast call (python/tessel/_fast.py): every case it takes
checked against NumPy (or torch), with a counter on the generic path to
show which calls were fast; in/out and out= semantics; errors raised from
the fast path keep their messages and locations; calls it does not take
give what the generic call gives; many threads calling one function."""
import concurrent.futures as cf
import sys

import numpy as np
import pytest

import tessel
from tessel import _fast
from pyhelpers import rand

AXPY = """def axpy(float(N) X, float a, float(N) Y, float(N) S) -> (Z, S) {
  Z(i) = a * X(i) + Y(i)
  S(i) += X(i)
}"""
SIZES = [1, 2, 7, 97, 1031]

pytestmark = pytest.mark.skipif(not _fast.AVAILABLE, reason="no fast call in this interpreter")


@pytest.fixture
def generic_calls(monkeypatch):
    """A list that gets one entry per call the fast path hands to the generic one."""
    seen = []
    real = _fast._G["general"] if _fast._G else None
    tessel.compile("def f(float(N) A) -> (B) { B(i) = A(i) }")  # _G made
    real = _fast._G["general"]

    def counting(self, args, out, kw):
        seen.append(self.name)
        return real(self, args, out, kw)
    monkeypatch.setitem(_fast._G, "general", counting)
    return seen


def poisoned(n):
    return np.full(n, np.nan, np.float32)


@pytest.mark.parametrize("N", SIZES)
def test_numpy_fast_results_inout_and_out(rng, N, generic_calls):
    f = tessel.compile(AXPY)
    X, Y, S = rand(rng, N), rand(rng, N), rand(rng, N)
    a = float(rng.uniform(-2, 2))
    S0 = S.copy()
    Z, S_ret = f(X, a, Y, S)  # the first call at this shape: generic (it learns the shapes)
    assert generic_calls == ["axpy"]
    assert S_ret is S
    np.testing.assert_allclose(Z, np.float32(a) * X + Y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(S, S0 + X, rtol=1e-6, atol=1e-6)
    for r in range(3):  # fast: allocated Z, then Z bound with out=
        X2, Y2 = rand(rng, N), rand(rng, N)
        S1 = S.copy()
        if r < 2:
            Z2, S_ret = f(X2, a, Y2, S)
        else:
            Zo = poisoned(N)
            Z2, S_ret = f(X2, a, Y2, S, out=(Zo, None))
            assert Z2 is Zo
        assert S_ret is S and Z2 is not Z
        np.testing.assert_allclose(Z2, np.float32(a) * X2 + Y2, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(S, S1 + X2, rtol=1e-6, atol=1e-6)
    assert generic_calls == ["axpy", "axpy"]  # out= as a tuple: generic
    # a scalar given as a NumPy scalar or an int is fine on the fast path
    Z3, _ = f(X, np.float32(1.5), Y, S)
    Z4, _ = f(X, 2, Y, S)
    np.testing.assert_allclose(Z3, 1.5 * X + Y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(Z4, 2 * X + Y, rtol=1e-6, atol=1e-6)
    assert len(generic_calls) == 2


def test_numpy_fast_single_output_out_and_strides(rng, generic_calls):
    f = tessel.compile("def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}")
    M, K, N = 13, 7, 31
    A, B = rand(rng, (M, K)), rand(rng, (K, N))
    f(A, B)
    generic_calls.clear()
    C = np.full((M, N), np.nan, np.float32)
    assert f(A, B, out=C) is C
    np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-5)
    # transposed and reversed views: the fast path passes their strides
    At, Bt = rand(rng, (K, M)).T, rand(rng, (K, 2 * N))[::-1, ::2]
    np.testing.assert_allclose(f(At, Bt), At @ Bt, rtol=1e-5, atol=1e-5)
    assert generic_calls == []
    # a read-only input works (through the generic path), a read-only output is refused
    Ar = A.copy()
    Ar.flags.writeable = False
    np.testing.assert_allclose(f(Ar, B), A @ B, rtol=1e-5, atol=1e-5)
    Cr = np.zeros((M, N), np.float32)
    Cr.flags.writeable = False
    with pytest.raises(tessel.ArgumentError, match="read-only"):
        f(A, B, out=Cr)


def test_fast_errors_keep_their_messages(rng, generic_calls):
    f = tessel.compile("def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}")
    A, B = rand(rng, (3, 4)), rand(rng, (4, 2))
    f(A, B)
    generic_calls.clear()
    with pytest.raises(tessel.ShapeError, match=r"size K is 4 from A dim 1 but 5 from B dim 0"):
        f(A, rand(rng, (5, 2)))
    with pytest.raises(tessel.ArgumentError, match=r"parameter 'A' is float32 but the tensor given is float64"):
        f(A.astype(np.float64), B)
    with pytest.raises(tessel.ShapeError, match=r"output 'C' has shape \(3, 2\) but the tensor given has shape"):
        f(A, B, out=np.zeros((2, 3), np.float32))
    with pytest.raises(tessel.ArgumentError, match=r"shares memory"):
        f(A, B, out=A[:, :2])
    # a gather out of range: the located message from the fast path
    g = tessel.compile("def gather(float(N) X, int32(M) I) -> (Y) {\n  Y(i) = X(I(i))\n}", filename="g.tc")
    X, I = rand(rng, 5), np.array([0, 4, 1, 2], np.int32)
    np.testing.assert_array_equal(g(X, I), X[I])
    I[2] = 7
    before = len(generic_calls)
    with pytest.raises(tessel.BoundsError) as e:
        g(X, I)
    assert "g.tc:2:" in str(e.value) and "7" in str(e.value)
    assert len(generic_calls) == before  # the bounds error came from the fast path
    # an output dtype NumPy lacks, at a shape the fast path knows: the generic path's message
    h = tessel.compile("def c(float(N) A) -> (B) { B(i) = bfloat16(A(i)) }")
    for _ in range(2):
        with pytest.raises(tessel.ArgumentError, match="NumPy has no bfloat16"):
            h(rand(rng, 6))
    # what the fast path does not take: the generic path's messages
    with pytest.raises(tessel.ArgumentError, match=r"parameter 'B' must be a tensor"):
        f(A, 3.0)
    with pytest.raises(tessel.ArgumentError, match=r"takes 2 arguments"):
        f(A, B, B)


def test_fast_matches_generic(rng):
    """The same calls through the generated __call__ and the generic one."""
    f = tessel.compile(AXPY)
    N = 37
    X, Y = rand(rng, N), rand(rng, N)
    S1, S2 = rand(rng, N), None
    S2 = S1.copy()
    for _ in range(3):
        Z1, _ = f(X, 0.25, Y, S1)
        Z2, _ = f._call_general(X, 0.25, Y, S2)
        np.testing.assert_array_equal(Z1, Z2)
        np.testing.assert_array_equal(S1, S2)


def test_many_threads_one_function_fast(rng, generic_calls):
    f = tessel.compile(AXPY)
    sizes = [int(s) for s in rng.integers(1, 3000, size=8)]
    inputs = [(rand(rng, n), rand(rng, n), float(rng.uniform(-2, 2))) for n in sizes]

    def work(k):
        X, Y, a = inputs[k]
        bad = 0
        S = np.zeros(len(X), np.float32)
        for r in range(40):
            Z, _ = f(X, a, Y, S)
            bad += not np.allclose(Z, np.float32(a) * X + Y, rtol=1e-6, atol=1e-6)
        bad += not np.allclose(S, 40 * X, rtol=1e-4, atol=1e-4)
        return bad
    with cf.ThreadPoolExecutor(8) as ex:
        assert sum(ex.map(work, range(8))) == 0
    assert len(generic_calls) <= 8 * 2  # at most the first calls of each thread's shapes


# ---- torch (CPU here; CUDA through bench/gpu_python.sh) -------------------------------

def test_torch_fast_cpu(rng, generic_calls):
    torch = pytest.importorskip("torch")
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        pytest.skip("this torch has no DLPack exchange API")
    f = tessel.compile(AXPY)
    N = 211
    X, Y, S = (torch.from_numpy(rand(rng, N)) for _ in range(3))
    S0 = S.clone()
    Z, S_ret = f(X, 0.5, Y, S)
    assert S_ret is S and isinstance(Z, torch.Tensor)
    generic_calls.clear()
    for r in range(3):
        X2 = torch.from_numpy(rand(rng, 2 * N))[::2]  # strided: fine on the CPU
        S1 = S.clone()
        Z2, _ = f(X2, 0.5, Y, S)
        torch.testing.assert_close(Z2, 0.5 * X2 + Y, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(S, S1 + X2, rtol=1e-6, atol=1e-6)
    assert generic_calls == []
    torch.testing.assert_close(S0.shape, S.shape)
    g = tessel.compile("def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}")
    A, B = torch.rand(5, 3), torch.rand(3, 4)
    g(A, B)
    C = torch.full((5, 4), float("nan"))
    assert g(A, B, out=C) is C
    torch.testing.assert_close(C, A @ B, rtol=1e-5, atol=1e-5)
    assert generic_calls == ["mm"]
    # a negated view goes generic and is refused there, with its message
    with pytest.raises(tessel.ArgumentError, match="lazily negated"):
        g(A._neg_view(), B)
    # tensors of a dtype tessel lacks: the generic path's message (the
    # fast call's argument errors are handed to it, nothing having run)
    with pytest.raises(tessel.ArgumentError, match="complex64"):
        g(A.to(torch.complex64), B)


def test_torch_fast_cpu_tensors_changed_in_place(rng, generic_calls):
    """Nothing about a tensor is remembered from one call to the next: the
    same objects resized, re-pointed (set_, .data =), transposed or
    negated in place give what a fresh call gives, and the fast call
    keeps no tensor alive after it returns."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        pytest.skip("this torch has no DLPack exchange API")
    import weakref
    def T(n):  # resizable: its own storage
        return torch.from_numpy(rand(rng, n)).clone()
    f = tessel.compile("def add(float(N) A, float(N) B) -> (C) { C(i) = A(i) + B(i) }")
    A, B, C = (T(4) for _ in range(3))
    f(A, B, out=C)
    generic_calls.clear()
    f(A, B, out=C)
    torch.testing.assert_close(C, A + B, rtol=0, atol=0)
    assert generic_calls == []
    assert f._local.fast.objl == [None] * 3  # let go after the fill
    A.resize_(9)  # a bigger storage: a new address
    A.copy_(T(9))
    with pytest.raises(tessel.ShapeError):
        f(A, B, out=C)
    B.resize_(9)
    C.resize_(9)
    B.copy_(T(9))
    C.fill_(float("nan"))
    assert f(A, B, out=C) is C
    torch.testing.assert_close(C, A + B, rtol=0, atol=0)
    A.set_(T(9))  # other memory, same object
    assert f(A, B, out=C) is C
    torch.testing.assert_close(C, A + B, rtol=0, atol=0)
    A.set_(A.untyped_storage(), 1, (4,), (2,))  # an offset, strided view of it
    B.resize_(4)
    C.resize_(4)
    assert f(A, B, out=C) is C
    torch.testing.assert_close(C, A + B, rtol=0, atol=0)
    A.data = T(4).double()  # another dtype, same object
    with pytest.raises(tessel.ArgumentError, match="float64"):
        f(A, B, out=C)
    A.data = torch._neg_view(T(4))  # the neg bit, set in place
    with pytest.raises(tessel.ArgumentError, match="lazily negated"):
        f(A, B, out=C)
    A.data = A.data.resolve_neg()
    g = tessel.compile("def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}")
    P, Q = torch.rand(5, 3), torch.rand(5, 4)
    R = g(P.t().contiguous(), Q)
    P.t_()  # the same object transposed in place: (3, 5), strides (1, 3)
    R = g(P, Q)
    torch.testing.assert_close(R, P @ Q, rtol=1e-5, atol=1e-5)
    # a new tensor at the address a freed one had
    for _ in range(3):
        X, Y = T(6), T(6)
        torch.testing.assert_close(f(X, Y), X + Y, rtol=0, atol=0)
        del X
    refs = [weakref.ref(t) for t in (A, B, C)]
    del A, B, C
    assert all(r() is None for r in refs)


def _torch_exchange():
    torch = pytest.importorskip("torch")
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        pytest.skip("this torch has no DLPack exchange API")
    return torch


def test_torch_fast_call_is_one_foreign_call(rng, generic_calls, monkeypatch):
    """A fast call on torch tensors makes one C call, tsl_program_call_dlpack
    (the fill and the run), which lets go of the GIL for the run through
    PyEval_SaveThread/PyEval_RestoreThread; a fast state made before torch
    was met gets torch's exchange API at its next call."""
    import ctypes
    torch = _torch_exchange()
    counts = {"_call_dl": 0, "_call": 0}
    for name in counts:
        real = _fast._G[name]

        def counted(*a, _real=real, _name=name):
            counts[_name] += 1
            return _real(*a)
        monkeypatch.setitem(_fast._G, name, counted)
    f = tessel.compile(AXPY)
    N = 301
    X, Y, S = (torch.from_numpy(rand(rng, N)) for _ in range(3))
    f(X, 1.5, Y, S)
    generic_calls.clear()
    counts.update({"_call_dl": 0, "_call": 0})
    for _ in range(5):
        S1 = S.clone()
        Z, _ = f(X, 1.5, Y, S)
        torch.testing.assert_close(Z, 1.5 * X + Y, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(S, S1 + X, rtol=1e-6, atol=1e-6)
    assert generic_calls == [] and counts == {"_call_dl": 5, "_call": 0}
    c = f._local.fast.call
    assert c.unlock == ctypes.cast(ctypes.pythonapi.PyEval_SaveThread, ctypes.c_void_p).value
    assert c.relock == ctypes.cast(ctypes.pythonapi.PyEval_RestoreThread, ctypes.c_void_p).value
    assert (c.n, c.fill, c.device.device_type) == (4, 0, 1)  # X, Y, S and Z filled; on the host
    # as a thread's fast state made before torch was imported has it
    c.exchange_api = None
    Z, _ = f(X, 1.5, Y, S)
    assert generic_calls == ["axpy"] and c.exchange_api
    Z, _ = f(X, 1.5, Y, S)
    assert generic_calls == ["axpy"]
    torch.testing.assert_close(Z, 1.5 * X + Y, rtol=1e-6, atol=1e-6)


def test_torch_fast_errors_are_the_generic_ones(rng, generic_calls):
    """Errors of torch calls on the fast path (shapes, a tensor resized
    between calls, out= of the wrong shape or overlapping, a gather index
    out of range, a negated view) read as the generic call's."""
    torch = _torch_exchange()
    f = tessel.compile("def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}",
                       filename="mm.tc")
    A, B = torch.from_numpy(rand(rng, (3, 4))).clone(), torch.from_numpy(rand(rng, (4, 2)))
    f(A, B)
    C = torch.empty(3, 2)

    def same(err, *args, fn=f, **kw):
        with pytest.raises(err) as fast:
            fn(*args, **kw)
        with pytest.raises(err) as gen:
            fn._call_general(*args, **kw)
        assert str(fast.value) == str(gen.value)
        return str(fast.value)
    assert "size K is 4 from A dim 1 but 5 from B dim 0" in same(tessel.ShapeError, A, torch.rand(5, 2))
    assert "output 'C' has shape (3, 2)" in same(tessel.ShapeError, A, B, out=torch.empty(2, 3))
    assert "shares memory" in same(tessel.ArgumentError, A, B, out=A[:, :2])
    assert "float64" in same(tessel.ArgumentError, A.double(), B, out=C)
    assert "lazily negated" in same(tessel.ArgumentError, A._neg_view(), B, out=C)
    assert "lazily negated" in same(tessel.ArgumentError, A, B, out=C._neg_view())
    f(A, B, out=C)
    A.resize_(3, 5)  # between two calls, in place
    assert "size K is 5 from A dim 1 but 4 from B dim 0" in same(tessel.ShapeError, A, B, out=C)
    g = tessel.compile("def gather(float(N) X, int32(M) I) -> (Y) {\n  Y(i) = X(I(i))\n}", filename="g.tc")
    X, I = torch.from_numpy(rand(rng, 5)), torch.tensor([0, 4, 1, 2], dtype=torch.int32)
    torch.testing.assert_close(g(X, I), X[I.long()])
    I[2] = 7
    before = len(generic_calls)
    msg = same(tessel.BoundsError, X, I, fn=g)
    assert "g.tc:2:" in msg and "7" in msg
    assert len(generic_calls) == before  # the fast call's own error


def test_torch_many_threads_one_function_fast(rng, generic_calls):
    """8 threads calling one function on torch tensors at once, each call
    letting go of the GIL for its run."""
    torch = _torch_exchange()
    f = tessel.compile(AXPY)
    sizes = [int(s) for s in rng.integers(1, 3000, size=8)]
    inputs = [(torch.from_numpy(rand(rng, n)), torch.from_numpy(rand(rng, n)), float(rng.uniform(-2, 2)))
              for n in sizes]

    def work(k):
        X, Y, a = inputs[k]
        bad = 0
        S = torch.zeros(len(X))
        for r in range(40):
            Z, _ = f(X, a, Y, S)
            bad += not torch.allclose(Z, a * X + Y, rtol=1e-5, atol=1e-5)
        bad += not torch.allclose(S, 40 * X, rtol=1e-4, atol=1e-4)
        return bad
    with cf.ThreadPoolExecutor(8) as ex:
        assert sum(ex.map(work, range(8))) == 0
    assert len(generic_calls) <= 8 * 2  # at most the first calls of each thread's shapes


def _cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        pytest.skip("this torch has no DLPack exchange API")
    return torch


def test_torch_fast_cuda_setup_error(generic_calls, monkeypatch):
    """An error in setting a GPU up for the fast call (torch's allocator on
    the args) is raised by the generic call, which makes the same setup:
    one error, from one place, whichever path meets it first."""
    torch = _cuda_torch()
    f = tessel.compile("def add(float(N) A, float(N) B) -> (C) { C(i) = A(i) + B(i) }")
    A, B = torch.rand(8, device="cuda"), torch.rand(8, device="cuda")
    f(A, B)  # generic: learns the shapes
    calls = []

    def boom(a, kind, dev_id):
        calls.append(sys._getframe(1).f_code.co_name)
        raise tessel.ArgumentError("the setup failed")
    monkeypatch.setattr(f, "_cuda_setup", boom)
    before = len(generic_calls)
    with pytest.raises(tessel.ArgumentError, match="the setup failed"):
        f(A, B)
    assert len(generic_calls) == before + 1
    assert calls == ["set_up", "_call_general"]  # tried by the fast call, raised by the generic one
    monkeypatch.undo()
    torch.testing.assert_close(f(A, B), A + B)


def test_torch_fast_cuda(generic_calls):
    """CUDA tensors through the fast call (run by bench/gpu_python.sh): the
    results, no generic call after the first, the current stream (read by
    tsl_program_call_dlpack), out=, f.sync, a strided input (generic:
    copied), a CUDA graph of fast calls."""
    torch = _cuda_torch()
    f = tessel.compile(AXPY)
    N = 4099
    X, Y, S = (torch.rand(N, device="cuda") - 0.5 for _ in range(3))
    f(X, 0.5, Y, S)
    generic_calls.clear()
    S1 = S.clone()
    Z, S_ret = f(X, 0.5, Y, S)
    assert S_ret is S and Z.is_cuda
    torch.testing.assert_close(Z, 0.5 * X + Y, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(S, S1 + X, rtol=1e-6, atol=1e-6)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # queued on the side stream, as torch's own ops would be
        Zo = torch.full((N,), float("nan"), device="cuda")
        S2 = S.clone()
        Z2, _ = f(X, 2.0, Y, S, out=(Zo, None))
    side.synchronize()
    torch.testing.assert_close(Zo, 2.0 * X + Y, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(S, S2 + X, rtol=1e-6, atol=1e-6)
    g = tessel.compile("def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}")
    A, B = torch.rand(33, 17, device="cuda"), torch.rand(17, 65, device="cuda")
    g(A, B)
    C = torch.full((33, 65), float("nan"), device="cuda")
    before = len(generic_calls)
    assert g(A, B, out=C) is C
    torch.testing.assert_close(C, A @ B, rtol=1e-4, atol=1e-4)
    assert len(generic_calls) == before
    # a fast call on a side stream is queued behind that stream's work:
    # the stream is torch's current one, read by the C call itself
    side2 = torch.cuda.Stream()
    Cs = torch.empty(33, 65, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side2):
        torch.cuda._sleep(20_000_000)  # the stream busy for milliseconds
        Cs.fill_(float("nan"))  # what a launch on another stream would run before
        assert g(A, B, out=Cs) is Cs
    torch.cuda.synchronize()
    torch.testing.assert_close(Cs, A @ B, rtol=1e-4, atol=1e-4)
    assert len(generic_calls) == before
    # f.sync reaches the fast call's run: an index out of range raised
    h = tessel.compile("def gather(float(N) X, int32(M) I) -> (Y) {\n  Y(i) = X(I(i))\n}")
    h.sync = True
    Xg, Ig = torch.randn(5, device="cuda"), torch.tensor([0, 4, 1, 2], dtype=torch.int32, device="cuda")
    h(Xg, Ig)
    before = len(generic_calls)
    Ig[2] = 9
    with pytest.raises(tessel.BoundsError, match="index 9 out of range"):
        h(Xg, Ig)
    Ig[2] = 3
    h.sync = False
    torch.testing.assert_close(h(Xg, Ig), Xg[Ig.long()])
    h.sync = True
    Ig[1] = 7
    with pytest.raises(tessel.BoundsError, match="index 7 out of range"):
        h(Xg, Ig)
    assert len(generic_calls) == before
    At = torch.rand(17, 33, device="cuda").t()  # strided: the generic path copies it
    torch.testing.assert_close(g(At, B), At @ B, rtol=1e-4, atol=1e-4)
    assert len(generic_calls) == before + 1
    # a CUDA graph of fast calls
    Cg = torch.empty(33, 65, device="cuda")
    g(A, B, out=Cg)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        g(A, B, out=Cg)
    A.copy_(torch.rand(33, 17, device="cuda"))
    Cg.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(Cg, A @ B, rtol=1e-4, atol=1e-4)
