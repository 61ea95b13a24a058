#!/usr/bin/env python3
"""paired.py — tessel and its PyTorch anchor timed in turns, in one process.

bench/gpu.sh's table times tessel (build/gpu_bench) and the anchors
(bench/anchors.py) in two processes a minute apart; on the lent H200 the
anchor moved by up to 13% between two tables of one call
(bench/results/gpu-2026-11-30-NVIDIA-H200-s33.md), more than the margin of
the rows whose ratio is near 1.0. Here both sides of a row run in the same
process, round after round in ABBA order (tessel, anchor, anchor, tessel,
...), so a change of clock or power state lands on both; each round gives
a ratio, and the table prints the median ratio and the rounds' range.

A side's time is a batch of n calls between two CUDA events, queued
behind a spin kernel (torch.cuda._sleep) so that the host runs ahead and
no launch overhead of either side is counted; inputs rotate among sets
larger than the L2 together; outputs are written in place on both sides
where the anchor allows (torch.mm(out=), tessel's out=). Before timing,
each side's output (poisoned with NaN first, for tessel) is compared with
a float64 reference.

    PYTHONPATH=python TESSEL_LIB=build/libtessel.so \\
        python3 bench/paired.py [--only 'GEMM bf16|attention'] [--rounds 10] [--batch-ms 20] \\
                                [--options K=V,...]

Runs on a CUDA machine with PyTorch; prints one line a round and a table
last. Rows: GEMM fp16/bf16 4096^3 and 8192^3 (cuBLAS), GEMM 4096^3 with
bias, bias + ReLU and bias + GELU fused (cuBLASLt's fused epilogues, and
torch.compile for GELU), attention at the BERT shape (SDPA's default
backend, cuDNN on Hopper, and its flash backend).

The timing differs from gpu_bench's on purpose: launches back to back
keep the GPU busy and warm, as a model's layers do, where gpu_bench times
each launch alone; both sides of a row are timed the same way.
"""
import argparse
import math
import os
import re
import statistics
import sys

import torch

import tessel

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
L2_BYTES = 60e6


def rel_err(x, ref):
    x = x.double()
    ref = ref.double()
    return ((x - ref).norm() / ref.norm()).item()


def example(name, dtype):
    """An example program with its element type spelled for the dtype."""
    with open(os.path.join(ROOT, "examples", name)) as f:
        return re.sub(r"\bfloat\(", f"{dtype}(", f.read())


def nsets(bytes_a_set):
    return max(2, min(8, int(2 * L2_BYTES / bytes_a_set) + 1))


class Side:
    """One side of a row: call(i) runs it on input set i (in place)."""

    def __init__(self, label, call):
        self.label, self.call, self.times = label, call, []


def time_batch(side, n):
    torch.cuda._sleep(2_000_000)  # about a millisecond: the host runs ahead
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    for i in range(n):
        side.call(i)
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / n * 1e-3


def run_row(work, flop, tessel_side, anchors, rounds, batch_ms):
    """Times tessel against each anchor in turns; returns table lines."""
    for s in [tessel_side] + anchors:  # warm-up: compile, load, autotune
        for i in range(3):
            s.call(i)
    torch.cuda.synchronize()
    est = time_batch(tessel_side, 3)
    n = max(5, int(batch_ms * 1e-3 / est))
    lines = []
    for anc in anchors:
        ratios, tt, ta = [], [], []
        for r in range(rounds):
            order = (tessel_side, anc) if r % 2 == 0 else (anc, tessel_side)
            t = {id(s): time_batch(s, n) for s in order}
            tt.append(t[id(tessel_side)])
            ta.append(t[id(anc)])
            ratios.append(ta[-1] / tt[-1])
            print(f"  {work} vs {anc.label} round {r}: tessel {flop / tt[-1] / 1e12:.1f}, "
                  f"anchor {flop / ta[-1] / 1e12:.1f} TFLOP/s, ratio {ratios[-1]:.3f}", flush=True)
        lines.append(f"| {work} | {anc.label} | {flop / statistics.median(tt) / 1e12:.1f} | "
                     f"{flop / statistics.median(ta) / 1e12:.1f} | **{statistics.median(ratios):.3f}** | "
                     f"{min(ratios):.3f}..{max(ratios):.3f} | {rounds} x {n} |")
    return lines


def gemm_row(dev, dtype, s, opts):
    tname = {torch.float16: "float16", torch.bfloat16: "bfloat16"}[dtype]
    f = tessel.compile(example("matmul.tc", tname), options=opts)
    k = nsets(2 * s * s * 2)
    sets = [(torch.randn(s, s, device=dev, dtype=dtype), torch.randn(s, s, device=dev, dtype=dtype))
            for _ in range(k)]
    c_t = torch.full((s, s), float("nan"), device=dev, dtype=dtype)
    c_a = torch.empty(s, s, device=dev, dtype=dtype)
    a, b = sets[0]
    f(a, b, out=c_t)
    ref = a.double() @ b.double()
    for what, got in (("tessel", c_t), ("cuBLAS", torch.mm(a, b))):
        err = rel_err(got, ref)
        print(f"GEMM {s}^3 {what}: rel error {err:.2e} against float64")
        assert err < 1e-2 and not math.isnan(err), (what, err)
    del ref
    tes = Side("tessel", lambda i: f(*sets[i % k], out=c_t))
    anc = Side("cuBLAS (torch.mm)", lambda i: torch.mm(*sets[i % k], out=c_a))
    name = {torch.float16: "fp16", torch.bfloat16: "bf16"}[dtype]
    return f"GEMM {name} {s}^3", 2.0 * s ** 3, tes, [anc]


EPILOGUES = {  # the statements after the product, the reference, the row's name
    "bias": ("  C(m,n) = C(m,n) + bias(n)\n", lambda x: x, "GEMM+bias"),
    "relu": ("  C(m,n) = fmaxf(C(m,n) + bias(n), 0)\n", lambda x: x.clamp(min=0), "GEMM+bias+ReLU"),
    "gelu": ("  C(m,n) = C(m,n) + bias(n)\n"
             "  C(m,n) = 0.5 * C(m,n) * (1 + tanh(0.7978845608028654 * (C(m,n) + 0.044715 * C(m,n) * C(m,n) * C(m,n))))\n",
             lambda x: 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))), "GEMM+bias+GELU"),
}


def epilogue_row(dev, kind, opts):
    """A 4096^3 fp16 GEMM with bias (and ReLU or GELU, tanh form) fused,
    against cuBLASLt's fused epilogue through torch (and, for GELU,
    torch.compile: the issue's target is the faster of the two)."""
    body, fref, label = EPILOGUES[kind]
    s = 4096
    src = ("def gemm_epi(float16(M,K) A, float16(K,N) B, float16(N) bias) -> (C) {\n"
           "  C(m,n) +=! A(m,k) * B(k,n)\n" + body + "}")
    f = tessel.compile(src, options=opts)
    k = nsets(2 * s * s * 2)
    sets = [(torch.randn(s, s, device=dev, dtype=torch.float16), torch.randn(s, s, device=dev, dtype=torch.float16))
            for _ in range(k)]
    bias = torch.randn(s, device=dev, dtype=torch.float16)
    c_t = torch.full((s, s), float("nan"), device=dev, dtype=torch.float16)
    c_a = torch.empty(s, s, device=dev, dtype=torch.float16)
    a, b = sets[0]
    f(a, b, bias, out=c_t)
    ref = fref(a.double() @ b.double() + bias.double())
    if kind == "bias":
        anchors = [Side("cuBLASLt epilogue (addmm)", lambda i: torch.addmm(bias, *sets[i % k], out=c_a))]
    else:
        gelu = kind == "gelu"
        anchors = [Side("cuBLASLt epilogue", lambda i: torch._addmm_activation(bias, *sets[i % k], use_gelu=gelu))]
    if kind == "gelu":
        cg = torch.compile(lambda a, b: torch.nn.functional.gelu(a @ b + bias, approximate="tanh"))
        try:
            anchors.append(Side("torch.compile", lambda i: cg(*sets[i % k])))
            anchors[-1].call(0)
        except Exception as e:  # no compiler toolchain on the machine
            print(f"GEMM+bias+GELU: torch.compile unavailable: {e}")
            anchors.pop()
    for what, got in [("tessel", c_t)] + [(x.label, x.call(0)) for x in anchors]:
        err = rel_err(got, ref)
        # the outputs near 0 from below (GELU's negative tail), where a fast
        # tanh would lose digits
        tail = (ref < -1e-3) & (ref > -0.1)
        terr = rel_err(got[tail], ref[tail]) if kind == "gelu" else 0.0
        print(f"{label} {what}: rel error {err:.2e} (on outputs in (-0.1, -1e-3): {terr:.2e}) against float64")
        assert err < 1e-2 and terr < 1e-2 and not math.isnan(err), (what, err, terr)
    del ref
    tes = Side("tessel", lambda i: f(*sets[i % k], bias, out=c_t))
    return f"{label} fp16 4096^3", 2.0 * s ** 3, tes, anchors


def attention_row(dev, opts, B=32, H=16, S=384, D=64):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    f = tessel.compile(example("attention.tc", "float16"), options=opts)
    k = nsets(3 * B * H * S * D * 2)
    sets = [tuple(torch.randn(B, H, S, D, device=dev, dtype=torch.float16) for _ in range(3)) for _ in range(k)]
    o_t = torch.full((B * H, S, D), float("nan"), device=dev, dtype=torch.float16)

    def folded(i):
        return tuple(x.view(B * H, S, D) for x in sets[i % k])
    q, kk, v = sets[0]
    f(*folded(0), out=o_t)
    qd, kd, vd = q[:2].double(), kk[:2].double(), v[:2].double()
    ref = torch.softmax(qd @ kd.transpose(-1, -2) / D ** 0.5, dim=-1) @ vd
    err = rel_err(o_t.view(B, H, S, D)[:2], ref)
    assert err < 1e-2 and not math.isnan(err), ("tessel", err)
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def flash(i):
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return sdpa(*sets[i % k])
    anchors = [Side("SDPA (cuDNN)", lambda i: sdpa(*sets[i % k])), Side("SDPA flash backend", flash)]
    for s in anchors:
        err = rel_err(s.call(0)[:2], ref)
        assert err < 1e-2 and not math.isnan(err), (s.label, err)
    tes = Side("tessel", lambda i: f(*folded(i), out=o_t))
    return f"attention fp16 B{B} H{H} S{S} D{D}", 4.0 * B * H * S * S * D, tes, anchors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="rows whose names contain one of these '|'-separated substrings "
                                               "(as gpu_bench's --only)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--batch-ms", type=float, default=20.0)
    ap.add_argument("--options", default=None, help="tessel options for every row")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("paired.py: no CUDA device")
    dev = torch.device("cuda")
    rows = [("GEMM fp16 4096^3", lambda: gemm_row(dev, torch.float16, 4096, args.options)),
            ("GEMM fp16 8192^3", lambda: gemm_row(dev, torch.float16, 8192, args.options)),
            ("GEMM bf16 4096^3", lambda: gemm_row(dev, torch.bfloat16, 4096, args.options)),
            ("GEMM bf16 8192^3", lambda: gemm_row(dev, torch.bfloat16, 8192, args.options)),
            ("GEMM+bias fp16 4096^3", lambda: epilogue_row(dev, "bias", args.options)),
            ("GEMM+bias+ReLU fp16 4096^3", lambda: epilogue_row(dev, "relu", args.options)),
            ("GEMM+bias+GELU fp16 4096^3", lambda: epilogue_row(dev, "gelu", args.options)),
            ("attention fp16 B32 H16 S384 D64", lambda: attention_row(dev, args.options))]
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"options {args.options or '(the defaults)'}")
    table = []
    for name, make in rows:
        if args.only and not any(w and w in name for w in args.only.split("|")):
            continue
        work, flop, tes, anchors = make()
        table += run_row(work, flop, tes, anchors, args.rounds, args.batch_ms)
        del tes, anchors
        torch.cuda.empty_cache()
    print("\n| work | anchor | tessel TFLOP/s | anchor TFLOP/s | anchor time / tessel time (median) "
          "| range over rounds | rounds x calls |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(table))


if __name__ == "__main__":
    main()
