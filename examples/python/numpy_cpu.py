"""NumPy on the CPU: a matmul with a scalar and a fused softmax, each checked
against NumPy, then timed (the first call generates and compiles the C; the
kernel cache makes later calls and later processes compile nothing).

    python3 examples/python/numpy_cpu.py          # from a checkout: PYTHONPATH=python
"""
import time

import numpy as np

import tessel

sgemm = tessel.compile("""
def sgemm(float(M,K) A, float(K,N) B, float alpha) -> (C) {
  C(m,n) +=! alpha * A(m,k) * B(k,n)
}""")

softmax = tessel.compile("""
def softmax(float(N,D) X) -> (Y) {
  mx(n) max=! X(n,d)
  e(n,d) = exp(X(n,d) - mx(n))
  s(n) +=! e(n,d)
  Y(n,d) = e(n,d) / s(n)
}""")

rng = np.random.default_rng()
A = rng.standard_normal((384, 257), dtype=np.float32)
B = rng.standard_normal((257, 191), dtype=np.float32)
t0 = time.perf_counter()
C = sgemm(A, B, alpha=0.5)                       # a new (384, 191) array
t1 = time.perf_counter()
np.testing.assert_allclose(C, 0.5 * (A.astype(np.float64) @ B), rtol=1e-4, atol=1e-4)

out = np.empty_like(C)
sgemm(A, B, 0.5, out=out)                        # into an array you have
t2 = time.perf_counter()
for _ in range(10):
    sgemm(A, B, 0.5, out=out)
t3 = time.perf_counter()
np.testing.assert_array_equal(out, C)
print(f"sgemm 384x257x191: first call {1e3 * (t1 - t0):.1f} ms (code generation + compile or cache), "
      f"then {1e3 * (t3 - t2) / 10:.2f} ms per call; {2 * 384 * 257 * 191 / ((t3 - t2) / 10) / 1e9:.2f} GFLOP/s")

X = rng.standard_normal((1000, 129), dtype=np.float32)
Y = softmax(X[:, ::-1])                          # a strided view: read in place
ref = np.exp(X[:, ::-1] - X.max(1, keepdims=True))
ref /= ref.sum(1, keepdims=True)
np.testing.assert_allclose(Y, ref, rtol=1e-5, atol=1e-6)
print("softmax 1000x129 on a reversed view: matches NumPy")
print("tile IR of the softmax plan (first lines):")
print("\n".join(softmax.emit("tile").splitlines()[:6]))
