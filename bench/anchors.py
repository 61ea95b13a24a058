"""anchors.py — the work tessel's GPU benchmarks are judged against, done by
PyTorch on the same machine in the same run: device-to-device copy, cuBLAS
GEMM, torch layernorm/softmax, two elementwise programs (scale-bias-relu,
SiLU), scaled_dot_product_attention, the quantized GEMV (torch's int4
kernel and cuBLAS on fp16 weights).

Each result is checked (against float64 / a reference formula) before it is
timed; timing is CUDA events after warm-up, median of many repetitions, with
inputs rotated so that the 50-60 MB L2 does not serve repeats.
Prints a table; with --json PATH also writes the figures."""
import argparse
import contextlib
import json
import statistics
import sys

import torch


def bench(fn, reps=50, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(times)


def rel_err(x, ref):
    x = x.double()
    ref = ref.double()
    return ((x - ref).norm() / ref.norm()).item()


def rotate(make, n):
    sets = [make() for _ in range(n)]
    state = {"i": 0}

    def nxt():
        s = sets[state["i"] % n]
        state["i"] += 1
        return s
    return nxt


def int4_anchor(dev, M, N, K, gs):
    """torch._weight_int4pack_mm at M x N x K (group gs): (median s, rel. error
    against the dequantized weights in float64). Weights w = (q - 8) * s + z
    per group, as the kernel defines them."""
    def make():
        q = torch.randint(0, 16, (N, K), dtype=torch.int32, device=dev)
        try:  # torch >= 2.5: uint8 [N, K / 2], two codes a byte
            wp = torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), 8)
        except Exception:
            wp = torch._convert_weight_to_int4pack(q, 8)
        s = torch.rand(K // gs, N, device=dev) * 0.01 + 0.001
        z = torch.rand(K // gs, N, device=dev) * 0.01
        sz = torch.stack([s, z], dim=2).to(torch.bfloat16).contiguous()
        x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        return x, wp, sz, q
    nxt = rotate(make, 4)
    x, wp, sz, q = nxt()
    y = torch._weight_int4pack_mm(x, wp, gs, sz)
    s = sz[..., 0].double().repeat_interleave(gs, 0)   # [K, N]
    z = sz[..., 1].double().repeat_interleave(gs, 0)
    w = (q.t().double() - 8) * s + z
    err = rel_err(y, x.double() @ w)
    assert err < 2e-2, err
    def run():
        a = nxt()
        return torch._weight_int4pack_mm(a[0], a[1], gs, a[2])
    t = bench(run)
    return t, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--only", help="run only the works whose name contains this, or one of several "
                    "separated by '|' (the copy always runs)")
    args = ap.parse_args()

    def want(work):
        return not args.only or any(o in work for o in args.only.split("|"))
    dev = torch.device("cuda")
    rows = []

    # copy: 1 GiB, bytes read + written
    n = 1 << 28
    src = torch.rand(n, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    assert torch.equal(dst, src)
    t = bench(lambda: dst.copy_(src))
    rows.append(("copy d2d 1 GiB", "bytes", 2 * n * 4 / t / 1e12, "TB/s", t))
    del src, dst
    # copies of the row benchmarks' sizes (fp16; sources rotated past L2):
    # the ceiling a kernel of that size can reach, launch and tail included
    for (r, c) in ((12288, 1024), (8192, 8192)):
        nxt = rotate(lambda: torch.rand(r, c, device=dev).half(), 4)
        dst = torch.empty(r, c, device=dev, dtype=torch.float16)
        src = nxt()
        dst.copy_(src)
        assert torch.equal(dst, src)
        t = bench(lambda: dst.copy_(nxt()))
        rows.append((f"copy d2d fp16 {r}x{c}", "bytes", 2 * r * c * 2 / t / 1e12, "TB/s", t))
        del nxt, dst, src

    # GEMMs as tessel's matmul.tc computes them: C[M,N] = A[M,K] B[K,N],
    # row-major, no TF32 (cuBLAS through torch.mm)
    torch.backends.cuda.matmul.allow_tf32 = False
    gemms = [("fp16", torch.float16, 4096, 4096, 4096), ("fp32", torch.float32, 4096, 4096, 4096),
             ("tf32", torch.float32, 4096, 4096, 4096),
             ("fp16", torch.float16, 8192, 8192, 8192), ("bf16", torch.bfloat16, 4096, 4096, 4096),
             ("bf16", torch.bfloat16, 8192, 8192, 8192), ("fp16", torch.float16, 4096, 14336, 4096),
             ("fp16", torch.float16, 4096, 4096, 14336), ("fp16", torch.float16, 128, 8192, 8192),
             ("fp16", torch.float16, 16, 8192, 8192), ("fp16", torch.float16, 1, 8192, 8192)]
    for name, dtype, M, N, K in gemms:
        work = f"GEMM {name} {M}^3" if M == N == K else f"GEMM {name} {M}x{N}x{K}"
        if not want(work):
            continue
        # the tf32 row: cuBLAS with TF32 allowed, as tessel's allow_tf32=1
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        tol = 5e-3 if name == "tf32" else 1e-4 if dtype == torch.float32 else 1e-2
        sets = max(2, min(8, int(2 * 60e6 / ((M * K + K * N) * (4 if dtype == torch.float32 else 2))) + 1))
        nxt = rotate(lambda: (torch.randn(M, K, device=dev, dtype=dtype),
                              torch.randn(K, N, device=dev, dtype=dtype)), sets)
        a, b = nxt()
        err = rel_err(a @ b, a.double() @ b.double())
        assert err < tol, (work, err)
        t = bench(lambda: torch.mm(*nxt()))
        rows.append((f"{work} (cuBLAS)", f"err {err:.1e}", 2 * M * N * K / t / 1e12, "TFLOP/s", t))
        del nxt, a, b
    torch.backends.cuda.matmul.allow_tf32 = False

    if want("GEMM+bias+GELU fp16 4096^3"):
        # cuBLASLt's fused epilogue (bias + GELU, tanh form) through torch
        s = 4096
        nxt = rotate(lambda: (torch.randn(s, s, device=dev, dtype=torch.float16),
                              torch.randn(s, s, device=dev, dtype=torch.float16)), 3)
        bias = torch.randn(s, device=dev, dtype=torch.float16)
        a, b = nxt()
        y = torch._addmm_activation(bias, a, b, use_gelu=True)
        x = a.double() @ b.double() + bias.double()
        ref = 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
        err = rel_err(y, ref)
        assert err < 1e-2, err
        # torch.compile of the same maths (the other anchor; the
        # target is the faster of the two), printed before cuBLASLt
        try:
            cg = torch.compile(lambda a, b: torch.nn.functional.gelu(a @ b + bias, approximate="tanh"))
            err_c = rel_err(cg(a, b), ref)
            assert err_c < 1e-2, err_c
            t = bench(lambda: cg(*nxt()))
            rows.append(("GEMM+bias+GELU fp16 4096^3 (torch.compile)", f"err {err_c:.1e}", 2 * s**3 / t / 1e12,
                         "TFLOP/s", t))
        except Exception as e:  # no compiler toolchain on the machine
            print(f"GEMM+bias+GELU: torch.compile unavailable: {e}")
        t = bench(lambda: torch._addmm_activation(bias, *nxt(), use_gelu=True))
        rows.append(("GEMM+bias+GELU fp16 4096^3 (cuBLASLt epilogue)", f"err {err:.1e}", 2 * s**3 / t / 1e12,
                     "TFLOP/s", t))
        del nxt, a, b

    if want("bmm fp16 B512 384x384x64"):
        B, M, N, K = 512, 384, 384, 64
        nxt = rotate(lambda: (torch.randn(B, M, K, device=dev, dtype=torch.float16),
                              torch.randn(B, K, N, device=dev, dtype=torch.float16)), 3)
        a, b = nxt()
        err = rel_err(torch.bmm(a, b), a.double() @ b.double())
        assert err < 1e-2, err
        t = bench(lambda: torch.bmm(*nxt()))
        rows.append((f"bmm fp16 B{B} {M}x{N}x{K} (torch.bmm)", f"err {err:.1e}", 2 * B * M * N * K / t / 1e12,
                     "TFLOP/s", t))
        del nxt, a, b

    for (r, c) in ((12288, 1024), (8192, 8192)):
        if not (want(f"layernorm fp16 {r}x{c}") or want(f"softmax fp16 {r}x{c}")):
            continue
        nxt = rotate(lambda: torch.randn(r, c, device=dev, dtype=torch.float16), 4)
        x = nxt()
        w = torch.randn(c, device=dev, dtype=torch.float16)
        bb = torch.randn(c, device=dev, dtype=torch.float16)
        y = torch.nn.functional.layer_norm(x, (c,), w, bb, 1e-5)
        xd = x.double()
        ref = (xd - xd.mean(1, keepdim=True)) / torch.sqrt(xd.var(1, unbiased=False, keepdim=True) + 1e-5) * w.double() + bb.double()
        err = rel_err(y, ref)
        assert err < 1e-2, err
        t = bench(lambda: torch.nn.functional.layer_norm(nxt(), (c,), w, bb, 1e-5))
        rows.append((f"layernorm fp16 {r}x{c} (torch)", f"err {err:.1e}", 2 * r * c * 2 / t / 1e12,
                     "TB/s", t))
        y = torch.softmax(x, dim=1)
        err = rel_err(y, torch.softmax(x.double(), dim=1))
        assert err < 1e-2, err
        t = bench(lambda: torch.softmax(nxt(), dim=1))
        rows.append((f"softmax fp16 {r}x{c} (torch)", f"err {err:.1e}", 2 * r * c * 2 / t / 1e12,
                     "TB/s", t))

    if want("scale-bias-relu fp16 8192x8192") or want("silu fp16 8192x8192"):
        # elementwise at 8192x8192 fp16 (bytes: X read, Y written): a broadcast
        # scale, bias and relu in PyTorch's fewest eager kernels (addcmul, relu),
        # and SiLU, one kernel
        r, c = 8192, 8192
        nxt = rotate(lambda: torch.randn(r, c, device=dev, dtype=torch.float16), 4)
        x = nxt()
        w = torch.randn(c, device=dev, dtype=torch.float16)
        bb = torch.randn(c, device=dev, dtype=torch.float16)
        y = torch.relu(torch.addcmul(bb, x, w))
        err = rel_err(y, torch.clamp(x.double() * w.double() + bb.double(), min=0))
        assert err < 1e-2, err
        t = bench(lambda: torch.relu(torch.addcmul(bb, nxt(), w)))
        rows.append((f"scale-bias-relu fp16 {r}x{c} (torch addcmul+relu)", f"err {err:.1e}", 2 * r * c * 2 / t / 1e12,
                     "TB/s", t))
        y = torch.nn.functional.silu(x)
        err = rel_err(y, x.double() * torch.sigmoid(x.double()))
        assert err < 1e-2, err
        t = bench(lambda: torch.nn.functional.silu(nxt()))
        rows.append((f"silu fp16 {r}x{c} (torch)", f"err {err:.1e}", 2 * r * c * 2 / t / 1e12, "TB/s", t))
        del x, y

    if want("sum fp32 1e8"):
        # a full reduction to a scalar: bytes read
        n = 100_000_000
        nxt = rotate(lambda: torch.rand(n, device=dev) - 0.5, 2)
        x = nxt()
        err = abs(torch.sum(x).double() - torch.sum(x.double())).item() / abs(torch.sum(x.double())).item()
        assert err < 1e-4, err
        t = bench(lambda: torch.sum(nxt()))
        rows.append(("sum fp32 1e8 (torch)", f"err {err:.1e}", n * 4 / t / 1e12, "TB/s", t))
        del nxt, x

    # issue 15's attention rows: SDPA's default backend (cuDNN on Hopper)
    # and its flash backend (the other target) on the same inputs,
    # checked against float64 on a slice first; the flash row is a work of
    # its own ("NAME, SDPA flash backend") so that report.py keeps both
    def sdpa_rows(name, nxt, flop, tol, causal=False):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        q, k, v = nxt()
        D = q.shape[-1]
        qd, kd, vd = q[:1, :2].double(), k[:1, :2].double(), v[:1, :2].double()
        sc = qd @ kd.transpose(-1, -2) / D**0.5
        if causal:
            S = sc.shape[-1]
            sc = sc.masked_fill(torch.ones(S, S, device=dev, dtype=torch.bool).triu(1), float("-inf"))
        ref = torch.softmax(sc, dim=-1) @ vd
        sdpa = torch.nn.functional.scaled_dot_product_attention
        for label, backends in (("SDPA", None), ("SDPA flash backend", [SDPBackend.FLASH_ATTENTION])):
            ctx = sdpa_kernel(backends) if backends else contextlib.nullcontext()
            try:
                with ctx:
                    err = rel_err(sdpa(q[:1, :2], k[:1, :2], v[:1, :2], is_causal=causal), ref)
                    assert err < tol, err
                    t = bench(lambda: sdpa(*nxt(), is_causal=causal))
            except RuntimeError as e:  # the backend declines the shape
                print(f"{name} ({label}): unavailable: {e}")
                continue
            work = name if backends is None else f"{name}, {label}"
            rows.append((f"{work} ({label})", f"err {err:.1e}", flop / t / 1e12, "TFLOP/s", t))

    def qkv(B, H, S, D, dtype):
        return lambda: tuple(torch.randn(B, H, S, D, device=dev, dtype=dtype) for _ in range(3))

    if want("attention fp16 B32 H16 S384 D64"):
        B, H, S, D = 32, 16, 384, 64
        nxt = rotate(qkv(B, H, S, D, torch.float16), 3)
        sdpa_rows(f"attention fp16 B{B} H{H} S{S} D{D}", nxt, 4 * B * H * S * S * D, 1e-2)
        del nxt

    # long sequences at head dim 128, with and without the causal mask
    # (TFLOP/s of the half computed), head dim 256 in bf16
    for causal in (False, True):
        name = f"attention {'causal ' if causal else ''}fp16 B4 H32 S4096 D128"
        if want(name):
            B, H, S, D = 4, 32, 4096, 128
            nxt = rotate(qkv(B, H, S, D, torch.float16), 2)
            sdpa_rows(name, nxt, 4 * B * H * S * S * D * (0.5 if causal else 1.0), 1e-2, causal)
            del nxt
    if want("attention bf16 B4 H16 S4096 D256"):
        B, H, S, D = 4, 16, 4096, 256
        nxt = rotate(qkv(B, H, S, D, torch.bfloat16), 2)
        sdpa_rows("attention bf16 B4 H16 S4096 D256", nxt, 4 * B * H * S * S * D, 2e-2)
        del nxt
    if want("attention decode fp16 B32 H32 Tq1 KV8192 D128"):
        B, H, T, D = 32, 32, 8192, 128
        nxt = rotate(lambda: (torch.randn(B, H, 1, D, device=dev, dtype=torch.float16),
                              torch.randn(B, H, T, D, device=dev, dtype=torch.float16),
                              torch.randn(B, H, T, D, device=dev, dtype=torch.float16)), 2)
        q, k, v = nxt()
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        qd, kd, vd = q[:2].double(), k[:2].double(), v[:2].double()
        err = rel_err(o[:2], torch.softmax(qd @ kd.transpose(-1, -2) / D**0.5, dim=-1) @ vd)
        assert err < 1e-2, err
        t = bench(lambda: torch.nn.functional.scaled_dot_product_attention(*nxt()))
        rows.append(("attention decode fp16 B32 H32 Tq1 KV8192 D128 (SDPA)", f"err {err:.1e}",
                     2 * 2 * B * H * T * D / t / 1e12, "TB/s", t))
        del nxt, q, k, v, o

    # issue 15: Graphene's 20-layer MLP, 8192 x 128 fp16, bias + ReLU (and
    # the 1/8 tessel's program applies: folded into W and c, so that each
    # layer is ONE cuBLASLt call with its bias + ReLU epilogue,
    # torch._addmm_activation); torch.compile of the same loop printed
    # first (the report pairs tessel's row with the last one: cuBLASLt)
    if want("MLP20 fp16 8192x128"):
        L, B, H = 20, 8192, 128
        nxt = rotate(lambda: (torch.rand(B, H, device=dev, dtype=torch.float16) * 2 - 1,
                              [(torch.rand(H, H, device=dev, dtype=torch.float16) * 2 - 1) * 0.125 for _ in range(L)],
                              [(torch.rand(H, device=dev, dtype=torch.float16) * 2 - 1) * 0.125 for _ in range(L)]), 8)

        def mlp(x, ws, cs):
            for w, c in zip(ws, cs):
                x = torch._addmm_activation(c, x, w.t())
            return x
        x, ws, cs = nxt()
        ref = x[:64].double()
        for w, c in zip(ws, cs):
            ref = torch.relu(ref @ w.double().t() + c.double())
        err = rel_err(mlp(x, ws, cs)[:64], ref)
        assert err < 1e-2, err
        try:
            cm = torch.compile(mlp)
            err_c = rel_err(cm(x, ws, cs)[:64], ref)
            assert err_c < 1e-2, err_c
            t = bench(lambda: cm(*nxt()))
            rows.append(("MLP20 fp16 8192x128 (torch.compile)", f"err {err_c:.1e}", 2 * L * B * H * H / t / 1e12,
                         "TFLOP/s", t))
        except Exception as e:  # no compiler toolchain on the machine
            print(f"MLP20: torch.compile unavailable: {e}")
        t = bench(lambda: mlp(*nxt()))
        rows.append(("MLP20 fp16 8192x128 (cuBLASLt addmm+relu, layer by layer)", f"err {err:.1e}",
                     2 * L * B * H * H / t / 1e12, "TFLOP/s", t))
        del nxt, x, ws, cs

    # issue 15: one LSTM cell step, B4096 H1024 I1024 fp16 (examples/lstm.tc's
    # layout: Wx (4,H,I), Wh (4,H,H)): eager (two GEMMs + pointwise) and
    # torch.compile (the anchor the issue names), eager printed last
    if want("LSTM cell fp16 B4096 H1024 I1024"):
        B, H, I = 4096, 1024, 1024
        nxt = rotate(lambda: (torch.rand(B, I, device=dev, dtype=torch.float16) * 2 - 1,
                              torch.rand(B, H, device=dev, dtype=torch.float16) * 2 - 1,
                              torch.rand(B, H, device=dev, dtype=torch.float16) * 2 - 1,
                              (torch.rand(4, H, I, device=dev, dtype=torch.float16) * 2 - 1) * 0.03,
                              (torch.rand(4, H, H, device=dev, dtype=torch.float16) * 2 - 1) * 0.03,
                              torch.rand(4, H, device=dev, dtype=torch.float16) * 2 - 1), 3)

        def cell(x, hp, cp, wx, wh, bias):
            g = (x @ wx.reshape(4 * H, I).t() + hp @ wh.reshape(4 * H, H).t() + bias.reshape(4 * H)).view(B, 4, H)
            cn = torch.sigmoid(g[:, 1]) * cp + torch.sigmoid(g[:, 0]) * torch.tanh(g[:, 2])
            return torch.sigmoid(g[:, 3]) * torch.tanh(cn), cn
        ins = nxt()
        d = [a.double() for a in ins]
        d[0], d[1], d[2] = d[0][:64], d[1][:64], d[2][:64]
        gd = (d[0] @ d[3].reshape(4 * H, I).t() + d[1] @ d[4].reshape(4 * H, H).t() + d[5].reshape(4 * H)).view(64, 4, H)
        cn_ref = torch.sigmoid(gd[:, 1]) * d[2] + torch.sigmoid(gd[:, 0]) * torch.tanh(gd[:, 2])
        hn_ref = torch.sigmoid(gd[:, 3]) * torch.tanh(cn_ref)
        hn, cn = cell(*ins)
        err = rel_err(hn[:64], hn_ref)
        assert err < 1e-2, err
        flops = 2 * B * 4 * H * (I + H)
        try:
            cc = torch.compile(cell)
            hc, _ = cc(*ins)
            err_c = rel_err(hc[:64], hn_ref)
            assert err_c < 1e-2, err_c
            t = bench(lambda: cc(*nxt()))
            rows.append(("LSTM cell fp16 B4096 H1024 I1024 (torch.compile)", f"err {err_c:.1e}", flops / t / 1e12,
                         "TFLOP/s", t))
        except Exception as e:  # no compiler toolchain on the machine
            print(f"LSTM: torch.compile unavailable: {e}")
        t = bench(lambda: cell(*nxt()))
        rows.append(("LSTM cell fp16 B4096 H1024 I1024 (eager)", f"err {err:.1e}", flops / t / 1e12, "TFLOP/s", t))
        del nxt, ins, d

    # issue 14: the quantized GEMV's anchors at (N, K) = 8192 x 8192, group
    # 128 — torch's int4 kernel (tinygemm, bf16 activations) and cuBLAS on
    # fp16 weights; rates in TB/s of tessel's bytes for the same work (W
    # packed + fp16 scales) so that the report's ratio is a time ratio
    for M in (1, 16):
        N = K = 8192
        gs = 128
        work = f"qgemv M={M} uint4 {N}x{K}"
        if want(work):
            try:
                t, err = int4_anchor(dev, M, N, K, gs)
                rows.append((f"{work} (torch _weight_int4pack_mm)", f"err {err:.1e}",
                             (N * K // 2 + K // gs * N * 2) / t / 1e12, "TB/s", t))
            except Exception as e:  # the private op's signature moves between torch versions
                print(f"{work}: torch _weight_int4pack_mm unavailable: {e}")
        work = f"qgemv M={M} float16 {N}x{K}"
        if want(work):
            nxt = rotate(lambda: (torch.randn(M, K, device=dev, dtype=torch.float16),
                                  torch.randn(K, N, device=dev, dtype=torch.float16) * 0.05), 4)
            x, w = nxt()
            err = rel_err(x @ w, x.double() @ w.double())
            assert err < 1e-2, err
            t = bench(lambda: torch.matmul(*nxt()))
            rows.append((f"{work} (cuBLAS fp16)", f"err {err:.1e}", N * K * 2 / t / 1e12, "TB/s", t))
            del nxt, x, w

    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"{'work':44s} {'check':12s} {'rate':>10s} {'unit':8s} {'median':>10s}")
    for w, chk, rate, unit, t in rows:
        print(f"{w:44s} {chk:12s} {rate:10.2f} {unit:8s} {t*1e6:8.1f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": [dict(work=w, check=c, rate=r, unit=u, median_s=t)
                                for w, c, r, u, t in rows]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
