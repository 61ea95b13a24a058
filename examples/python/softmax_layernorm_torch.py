"""Fused softmax and layernorm on PyTorch tensors (CUDA when available, else
CPU), checked against torch.softmax and torch.nn.functional.layer_norm;
half precision on the GPU. Each def becomes one or two kernels; the tensors
are read and written where they are (no copy), on torch's current stream.

    python3 examples/python/softmax_layernorm_torch.py
"""
import torch

import tessel

dev = "cuda" if torch.cuda.is_available() else "cpu"
dt = "float16" if dev == "cuda" else "float32"
tdt = getattr(torch, dt)

softmax = tessel.compile(f"""
def softmax({dt}(N,D) X) -> (Y) {{
  mx(n) max=! X(n,d)
  e(n,d) = exp(float32(X(n,d) - mx(n)))
  s(n) +=! e(n,d)
  Y(n,d) = {dt}(e(n,d) / s(n))
}}""")

layernorm = tessel.compile(f"""
def layernorm({dt}(N,D) X, {dt}(D) gamma, {dt}(D) beta) -> (Y) {{
  mean(n) +=! float32(X(n,d))
  mean(n) = mean(n) / D
  xc(n,d) = float32(X(n,d)) - mean(n)
  var(n) +=! xc(n,d) * xc(n,d)
  var(n) = var(n) / D
  Y(n,d) = {dt}(xc(n,d) * rsqrt(var(n) + 1e-5) * gamma(d) + beta(d))
}}""")

N, D = (4096, 1024) if dev == "cuda" else (513, 257)
x = torch.randn(N, D, device=dev, dtype=tdt)
g = torch.randn(D, device=dev, dtype=tdt)
b = torch.randn(D, device=dev, dtype=tdt)
tol = dict(rtol=2e-2, atol=2e-3) if dt == "float16" else dict(rtol=1e-5, atol=1e-6)

y = softmax(x)
assert y.device == x.device and y.dtype == x.dtype
torch.testing.assert_close(y, torch.softmax(x.float(), -1).to(tdt), **tol)
ln = layernorm(x, g, b)
torch.testing.assert_close(ln, torch.nn.functional.layer_norm(x.float(), (D,), g.float(), b.float()).to(tdt),
                           **dict(tol, atol=2e-2) if dt == "float16" else tol)
out = torch.empty_like(x)
assert softmax(x, out=out) is out                       # written in place
print(f"softmax and layernorm {N}x{D} {dt} on {dev}: match torch")

if dev == "cuda":
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):                           # runs on the current stream
        y2 = softmax(x)
    s.synchronize()
    torch.testing.assert_close(y2, y, rtol=0, atol=0)
    for f, args, ref in [(softmax, (x,), lambda: torch.softmax(x, -1)),
                         (layernorm, (x, g, b), lambda: torch.nn.functional.layer_norm(x, (D,), g, b))]:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for name, call in [("tessel", lambda: f(*args)), ("torch", ref)]:
            call()
            start.record()
            for _ in range(50):
                call()
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end) / 50
            print(f"  {f.name:9s} {name:6s} {ms * 1e3:8.1f} us  {2 * N * D * 2 / ms / 1e6:7.1f} GB/s")
