"""The package on PyTorch tensors: CPU here and everywhere torch is installed
(skipped cleanly without it), CUDA where a GPU is (results against torch,
pointer identity, the current stream, custom ops under torch.compile and in
CUDA graphs, the profiler showing no copy)."""
import ctypes

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessel  # noqa: E402
import tessel.torch  # noqa: E402

CUDA = torch.cuda.is_available()
cuda_only = pytest.mark.skipif(not CUDA, reason="no CUDA device")

SOFTMAX = """
def softmax(float(N,D) X) -> (Y) {
  mx(n) max=! X(n,d)
  e(n,d) = exp(X(n,d) - mx(n))
  s(n) +=! e(n,d)
  Y(n,d) = e(n,d) / s(n)
}"""
MM = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}"
AXPY_INOUT = "def upd(float(N) X, float a, float(N) S) -> (S, T) {\n  S(i) += a * X(i)\n  T(i) = X(i) * 2\n}"


@pytest.fixture(autouse=True)
def fresh_seed():
    torch.manual_seed(int(np.random.SeedSequence().entropy % (2**31)))


# ---- CPU tensors -----------------------------------------------------------------

@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8"])
def test_cpu_dtypes(dt):
    f = tessel.compile(f"def f({dt}(N,K) A, {dt}(N,K) B) -> (C) {{\n  C(n,k) = A(n,k) * B(n,k) + A(n,k)\n}}")
    tdt = getattr(torch, dt)
    N, K = 37, 13
    if tdt.is_floating_point:
        A, B = torch.randn(N, K).to(tdt), torch.randn(N, K).to(tdt)
    else:
        lo = 0 if dt.startswith("u") else -10
        A, B = torch.randint(lo, 10, (N, K)).to(tdt), torch.randint(lo, 10, (N, K)).to(tdt)
    C = f(A, B)
    assert isinstance(C, torch.Tensor) and C.dtype == tdt and C.device.type == "cpu"
    if tdt.is_floating_point:
        ref = A.double() * B.double() + A.double()
        tol = 3e-2 if dt in ("float16", "bfloat16") else 1e-6
        torch.testing.assert_close(C.double(), ref, rtol=tol, atol=tol)
    else:
        torch.testing.assert_close(C, A * B + A)


@pytest.mark.parametrize("tc,tname", [("float8e4m3", "float8_e4m3fn"), ("float8e5m2", "float8_e5m2")])
def test_cpu_float8(tc, tname):
    if not hasattr(torch, tname):
        pytest.skip(f"torch has no {tname}")
    tdt = getattr(torch, tname)
    f = tessel.compile(f"def f({tc}(N) A, float(N) B) -> (C, D) {{\n  C(i) = float32(A(i)) * B(i)\n"
                       f"  D(i) = {tc}(B(i))\n}}")
    A = torch.randn(53).to(tdt)
    B = torch.randn(53)
    C, D = f(A, B)
    assert D.dtype == tdt
    torch.testing.assert_close(C, A.float() * B, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(D.float(), B.to(tdt).float(), rtol=0, atol=0)


def test_cpu_zero_copy_and_views():
    f = tessel.compile(MM)
    A, B = torch.randn(13, 7), torch.randn(7, 31)
    C = torch.full((13, 31), float("nan"))
    p = C.data_ptr()
    assert f(A, B, out=C) is C and C.data_ptr() == p
    torch.testing.assert_close(C, A @ B, rtol=1e-5, atol=1e-5)
    # strided inputs read in place: a transpose, a slice, an expand (stride 0)
    At = torch.randn(7, 13).t()
    Bs = torch.randn(7, 62)[:, ::2]
    Be = torch.randn(1, 31).expand(7, 31)
    torch.testing.assert_close(f(At, Bs), At @ Bs, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(f(At, Be), At @ Be, rtol=1e-5, atol=1e-5)
    # in/out updated at its address; a tensor that requires grad is read
    u = tessel.compile(AXPY_INOUT)
    X = torch.randn(29, requires_grad=True)
    S = torch.randn(29)
    S0 = S.clone()
    ps = S.data_ptr()
    S_, T = u(X, 0.5, S)
    assert S_ is S and S.data_ptr() == ps
    torch.testing.assert_close(S, S0 + 0.5 * X.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(T, X.detach() * 2)


def test_cpu_errors():
    f = tessel.compile(MM)
    with pytest.raises(tessel.ArgumentError, match="complex"):
        f(torch.randn(3, 3, dtype=torch.complex64), torch.randn(3, 3))
    with pytest.raises(tessel.ArgumentError, match=r"parameter 'A' is float32 but the tensor given is float64"):
        f(torch.randn(3, 3, dtype=torch.float64), torch.randn(3, 3))
    with pytest.raises(tessel.ShapeError, match="size K"):
        f(torch.randn(3, 4), torch.randn(5, 3))
    with pytest.raises(tessel.ArgumentError, match="only strided"):
        f(torch.randn(3, 3).to_sparse(), torch.randn(3, 3))
    E = torch.empty(0, 3)  # no memory (address 0) ...
    assert f(E, torch.randn(3, 3)).shape == (0, 3)
    with pytest.raises(tessel.ArgumentError, match="device 'meta'"):  # ... nor here, after it
        f(torch.empty(0, 3, device="meta"), torch.randn(3, 3))


def test_cpu_repeated_calls_follow_changed_tensors():
    """A call's DLTensor is kept per argument slot while the tensor looks
    the same: the same objects changed in place, views over the same
    memory and a negated view must each be seen afresh."""
    f = tessel.compile("def g(float(N,K) A, float(N,K) B) -> (C) {\n  C(n,k) = A(n,k) * 2 + B(n,k)\n}")
    N, K = 7, 5
    A, B = torch.randn(N, K), torch.randn(N, K)
    C = torch.full((N, K), float("nan"))
    for _ in range(3):  # the same objects again: the same answer
        f(A, B, out=C)
        torch.testing.assert_close(C, A * 2 + B, rtol=1e-6, atol=1e-6)
    A.copy_(torch.randn(N, K))  # new values, same memory
    f(A, B, out=C)
    torch.testing.assert_close(C, A * 2 + B, rtol=1e-6, atol=1e-6)
    At = torch.randn(K, N).t()  # same shape, other strides
    f(At, B, out=C)
    torch.testing.assert_close(C, At * 2 + B, rtol=1e-6, atol=1e-6)
    A.resize_(N + 2, K)  # the same object, a new shape (and maybe memory)
    A.normal_()
    B2, C2 = torch.randn(N + 2, K), torch.full((N + 2, K), float("nan"))
    f(A, B2, out=C2)
    torch.testing.assert_close(C2, A * 2 + B2, rtol=1e-6, atol=1e-6)
    A.set_(torch.randn(N, K))  # the same object over other storage
    f(A, B, out=C)
    torch.testing.assert_close(C, A * 2 + B, rtol=1e-6, atol=1e-6)
    A.data = A.data.view(torch.int32)  # the same object and memory, another dtype
    with pytest.raises(tessel.ArgumentError, match="float32 but the tensor given is int32"):
        f(A, B, out=C)
    z = torch.randn(N, K, dtype=torch.complex64)
    X = z.real.clone()
    f(z.imag, B, out=C)  # a view of the imaginary parts ...
    torch.testing.assert_close(C, z.imag * 2 + B, rtol=1e-6, atol=1e-6)
    neg = z.conj().imag  # ... then a negated view (is_neg) of the same memory
    assert neg.is_neg() and neg.data_ptr() == z.imag.data_ptr() and neg.stride() == z.imag.stride()
    with pytest.raises(tessel.ArgumentError, match="negated"):
        f(neg, B, out=C)
    f(X, B, out=C)
    torch.testing.assert_close(C, X * 2 + B, rtol=1e-6, atol=1e-6)


def test_torch_allocator_callbacks_on_host():
    """The tsl_allocator tessel.torch passes to the C API (PyTorch's caching
    allocator on a GPU) is a ctypes callback taking DLDevice by value: here
    its host branch allocates an output the C args own."""
    from tessel import _lib, _torch_kind
    from tessel.function import _Args
    f = tessel.compile("def f(float(N) A) -> (B) { B(i) = A(i) + 1 }")
    a = _Args(f._prog, f._nslots, f._nparams)
    al = _torch_kind.TorchAllocator()
    assert _lib.lib.tsl_args_set_allocator(a.ptr, ctypes.byref(al.struct)) == 0
    x = torch.randn(41)
    slot = a.slots[0]
    ptr, keep, *_ = _torch_kind.describe(x, slot, False, "A")
    a.tensors[0] = ptr
    a.tensors[1] = None
    assert _lib.lib.tsl_args_bind(a.ptr, a.tensors, a.scalars) == 0
    assert _lib.lib.tsl_program_run(f._prog.ptr, a.ptr, 1) == 0, _lib.lib.tsl_context_error(f._ctx.ptr)
    out = _lib.DLTensor.from_address(_lib.lib.tsl_args_output(a.ptr, b"B"))
    assert out.data in al._host and al.failures == 0
    got = torch.frombuffer((ctypes.c_float * 41).from_address(out.data), dtype=torch.float32)
    torch.testing.assert_close(got, x + 1)
    del a  # frees the output through the allocator
    assert not al._host


# ---- custom ops ---------------------------------------------------------------------

def test_custom_op_opcheck_and_compile():
    sm = tessel.torch.op(tessel.compile(SOFTMAX), "tessel_tests::softmax_cpu")
    assert sm.schema == "(Tensor X) -> Tensor"
    x = torch.randn(17, 33)
    torch.testing.assert_close(sm(x), torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    torch.library.opcheck(sm.op, (x,), test_utils=("test_schema", "test_faketensor"))
    g = torch.compile(lambda t: sm(t) * 3 + 1, fullgraph=True)
    torch.testing.assert_close(g(x), torch.softmax(x, -1) * 3 + 1, rtol=1e-5, atol=1e-6)
    y = torch.randn(5, 9)   # another shape: a recompile, same op
    torch.testing.assert_close(g(y), torch.softmax(y, -1) * 3 + 1, rtol=1e-5, atol=1e-6)


def test_custom_op_inout_and_scalars():
    up = tessel.torch.op(tessel.compile(AXPY_INOUT), "tessel_tests::upd_cpu")
    assert up.schema == "(Tensor X, float a, Tensor(a!) S) -> Tensor"
    X, S = torch.randn(23), torch.randn(23)
    S0 = S.clone()
    T = up(X, 1.5, S)
    torch.testing.assert_close(S, S0 + 1.5 * X, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(T, 2 * X)

    def model(x, s):
        return up(x, 0.25, s) + 1

    S = S0.clone()
    T = torch.compile(model, fullgraph=True)(X, S)
    torch.testing.assert_close(S, S0 + 0.25 * X, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(T, 2 * X + 1)
    with pytest.raises(tessel.ArgumentError, match="namespace::opname"):
        tessel.torch.op(tessel.compile(SOFTMAX), "noname")


# ---- CUDA tensors ------------------------------------------------------------------

@cuda_only
@pytest.mark.parametrize("dt", ["float16", "float32"])
def test_cuda_results_and_zero_copy(dt):
    tdt = getattr(torch, dt)
    f = tessel.compile(SOFTMAX.replace("float(", f"{dt}("))
    for N, D in [(1, 1), (7, 13), (128, 1024), (1031, 4099)]:
        x = torch.randn(N, D, device="cuda", dtype=tdt)
        y = f(x)
        assert y.device == x.device and y.dtype == tdt
        tol = dict(rtol=2e-2, atol=2e-3) if dt == "float16" else dict(rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), **tol)
        out = torch.full_like(x, float("nan"))
        p = out.data_ptr()
        assert f(x, out=out) is out and out.data_ptr() == p
        torch.testing.assert_close(out, y, rtol=0, atol=0)
    m = tessel.compile(MM)
    A, B = torch.randn(65, 33, device="cuda"), torch.randn(33, 97, device="cuda")
    torch.testing.assert_close(m(A, B), A @ B, rtol=1e-4, atol=1e-4)
    u = tessel.compile(AXPY_INOUT)
    X, S = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    S0, ps = S.clone(), S.data_ptr()
    S_, T = u(X, 0.5, S)
    assert S_ is S and S.data_ptr() == ps
    torch.testing.assert_close(S, S0 + 0.5 * X, rtol=1e-6, atol=1e-6)


@cuda_only
def test_cuda_current_stream():
    """tessel runs on the current stream: work queued before it on a side
    stream (behind a sleep) is seen, with no synchronisation in between."""
    f = tessel.compile("def f(float(N) X) -> (Y) { Y(i) = X(i) + 1 }")
    s = torch.cuda.Stream()
    x = torch.zeros(1 << 20, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)   # ~tens of ms on the side stream
        x.fill_(41.0)
        y = f(x)
    s.synchronize()
    assert bool((y == 42).all())
    assert 0 < f.bench(x, reps=5) < 1000  # CUDA events on the current stream


@cuda_only
def test_cuda_graph_capture():
    sm = tessel.torch.op(tessel.compile(SOFTMAX), "tessel_tests::softmax_graph")
    att = tessel.torch.op(tessel.compile("""
def attention(float(B,T,D) Q, float(B,T,D) K, float(B,T,D) V) -> (O) {
  sc(b,i,j) +=! Q(b,i,d) * K(b,j,d)
  rmax(b,i) max=! sc(b,i,j)
  p(b,i,j) = exp(sc(b,i,j) - rmax(b,i))
  den(b,i) +=! p(b,i,j)
  O(b,i,e) +=! p(b,i,j) * V(b,j,e)
  O(b,i,e) = O(b,i,e) / den(b,i)
}"""), "tessel_tests::attention_graph")
    # a full reduction: its partials are a scratch buffer taken per run
    tot = tessel.torch.op(tessel.compile("def total(float(N,M) X) -> (S) {\n  S() +=! X(n,m)\n}"),
                          "tessel_tests::total_graph")
    x = torch.randn(64, 257, device="cuda")
    q, k, v = (torch.randn(3, 37, 16, device="cuda") for _ in range(3))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):            # warm up: compile, allocate
        sm(x)
        att(q, k, v)
        tot(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = sm(x) * 2
        o = att(q, k, v)
        t = tot(x)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        q.copy_(torch.randn_like(q))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y, torch.softmax(x, -1) * 2, rtol=1e-5, atol=1e-6)
        ref = torch.softmax(q @ k.transpose(1, 2), -1) @ v
        torch.testing.assert_close(o, ref, rtol=1e-4, atol=1e-5)
        assert t.shape == () and abs(float(t) - float(x.double().sum())) <= 1e-3 * (1 + float(x.abs().sum()))


@cuda_only
def test_cuda_graph_outlives_eviction():
    """A graph keeps working after 20 other programs pushed its function's
    prepared plan out of the 16 kept: captured executors are never freed."""
    f = tessel.compile("def g(float(N) X) -> (Y) { Y(i) = X(i) * 3 - 1 }")
    x = torch.randn(1000, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        f(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = f(x)
    for k in range(20):
        h = tessel.compile(f"def h{k}(float(N) X) -> (Y) {{ Y(i) = X(i) + {k} }}")
        torch.testing.assert_close(h(x), x + k)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x * 3 - 1)


@cuda_only
def test_cuda_two_streams():
    """One function on two streams at once, each run with temporaries and
    scratch of its own: no run sees the other's."""
    f = tessel.compile("""
def two(float(N,K) A, float(K,M) B) -> (Y, S) {
  T(n,m) +=! A(n,k) * B(k,m)
  U(n) max=! T(n,m)
  Y(n,m) = T(n,m) - U(n)
  S() +=! Y(n,m)
}""")
    streams = [torch.cuda.Stream() for _ in range(2)]
    inputs = [(torch.randn(67, 129, device="cuda"), torch.randn(129, 71 + 30 * i, device="cuda")) for i in range(2)]
    outs = [[], []]
    torch.cuda.synchronize()
    for rep in range(20):
        for i, st in enumerate(streams):
            with torch.cuda.stream(st):
                if rep == 0:
                    torch.cuda._sleep(1_000_000)
                outs[i].append(f(*inputs[i]))
    torch.cuda.synchronize()
    for i in range(2):
        A, B = inputs[i]
        T = A.double() @ B.double()
        Y = T - T.max(1, keepdim=True).values
        for y, s_ in outs[i]:
            torch.testing.assert_close(y.double(), Y, rtol=1e-4, atol=1e-3)
            assert abs(float(s_) - float(Y.sum())) <= 1e-4 * (1 + float(Y.abs().sum()))


@cuda_only
def test_cuda_torch_compile_reduce_overhead():
    sm = tessel.torch.op(tessel.compile(SOFTMAX), "tessel_tests::softmax_ro")
    lin = torch.nn.Linear(128, 128).cuda()

    def model(t):
        return sm(lin(t)) + 1

    x = torch.randn(64, 128, device="cuda")
    with torch.no_grad():
        ref = torch.softmax(lin(x), -1) + 1
        for mode in ("default", "reduce-overhead"):
            g = torch.compile(model, mode=mode, fullgraph=True)
            for _ in range(3):
                torch.testing.assert_close(g(x), ref, rtol=1e-5, atol=1e-6)


@cuda_only
def test_cuda_no_copy_in_profile():
    f = tessel.compile(SOFTMAX)
    x = torch.randn(512, 1024, device="cuda")
    out = torch.empty_like(x)
    f(x, out=out)
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            f(x, out=out)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events()]
    copies = [n for n in names if "memcpy" in n.lower() or "copy_" in n.lower()]
    assert not copies, copies
    assert any("tsl_cuda_softmax" in n for n in names), sorted(set(names))[:20]


@cuda_only
def test_cuda_errors_and_views():
    f = tessel.compile(MM)
    A = torch.randn(13, 7, device="cuda")
    with pytest.raises(tessel.ArgumentError, match=r"'A' is on cuda:0 but 'B' is on cpu|is on cpu"):
        f(A, torch.randn(7, 5))
    At = torch.randn(7, 13, device="cuda").t()       # a strided input: copied by torch, then run
    B = torch.randn(7, 5, device="cuda")
    torch.testing.assert_close(f(At, B), At @ B, rtol=1e-4, atol=1e-4)
    Ct = torch.empty(5, 13, device="cuda").t()        # a strided output: an error
    with pytest.raises(tessel.ArgumentError, match="not C-contiguous"):
        f(A, B, out=Ct)
    g = tessel.compile("def gather(float(N) X, int32(M) I) -> (Y) {\n  Y(i) = X(I(i))\n}")
    g.sync = True
    X = torch.randn(5, device="cuda")
    I = torch.tensor([0, 4, 9, 1], dtype=torch.int32, device="cuda")
    with pytest.raises(tessel.BoundsError, match="index 9 out of range"):
        g(X, I)
    I[2] = 3
    torch.testing.assert_close(g(X, I), X[I.long()])
