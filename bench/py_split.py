#!/usr/bin/env python3
"""py_split.py — where the time of a cached fast call on torch CPU tensors
goes (C = A + B on 4 floats, f(A, B, out=C)), each part timed in one
process, the rows alternated, best of --rounds rounds (py_overhead.py's
timer: best of 40 batches of about 2 ms):

  call        the whole call;
  no-is_neg   the generated source without its is_neg() checks (not
              safe: for the split only);
  c-nop       tsl_program_call_dlpack replaced by a C no-op (strncmp with
              n = 0) through ctypes: the Python layer and one foreign call;
  py-nop      ... by a Python function returning 0: the Python layer alone;
  one-call    tsl_program_call_dlpack alone, through ctypes, on the same
              ready arguments (the fill and the run);
  fill        tsl_dlpack_fill alone, through ctypes (PyDLL);
  c-run       tsl_program_call on the filled descriptors, through ctypes;
  ctypes-nop  one ctypes call of libc abs, to tell a loaded machine;
  is_neg x1   one tensor's is_neg() alone;
  torch.add   torch.add(A, B, out=C) beside it.

With --device cuda the tensors are CUDA tensors and each batch ends with
a synchronize (the calls are asynchronous); the C rows then include the
launch.

    PYTHONPATH=python python3 bench/py_split.py [--rounds 5] [--device cuda]
"""
import argparse
import ctypes
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tessel  # noqa: E402
from tessel import _fast, _lib  # noqa: E402
from py_overhead import ADD, c_run_only, calibration, timeit  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    f = tessel.compile(ADD)
    dev = args.device
    a, b, c = torch.rand(4, device=dev), torch.rand(4, device=dev), torch.full((4,), float("nan"), device=dev)
    sync = torch.cuda.synchronize if dev == "cuda" else None
    f(a, b, out=c)
    f(a, b, out=c)
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)
    print("All results match. Starting benchmarks.")
    real_call = type(f).__call__
    src = real_call.__tessel_source__
    ns: dict = {}
    exec(compile(re.sub(r" and not \w+\.is_neg\(\)", "", src), "<no is_neg>", "exec"), _fast._G, ns)
    no_neg = ns["__call__"]
    fs = f._local.fast
    call_dl = _fast._G["_call_dl"]
    nop = ctypes.CDLL(None).strncmp
    nop.restype = ctypes.c_int
    fill = ctypes.PyDLL(_lib.library_path)["tsl_dlpack_fill"]
    fill.restype = ctypes.c_int
    cl = fs.call
    p_api, p_objs, p_dl = (ctypes.c_void_p.from_param(v) for v in (cl.exchange_api, cl.objects, cl.filled))
    p_dev = ctypes.byref(cl.device)
    n = cl.n

    def one_call():
        ol = fs.objl
        ol[0], ol[1], ol[2] = a, b, c  # held for the whole row: the list is not cleared
        return lambda: call_dl(fs.p_prog, fs.p_args, fs.p_call, False)

    def fill_only():
        ol = fs.objl
        ol[0], ol[1], ol[2] = a, b, c
        return lambda: fill(p_api, p_objs, n, p_dl, p_dev)

    def with_call_dl(fn):
        def run():
            _fast._G["_call_dl"] = fn
            try:
                return timeit(lambda: f(a, b, out=c), args.n, sync)
            finally:
                _fast._G["_call_dl"] = call_dl
        return run

    def with_source(fn):
        def run():
            type(f).__call__ = fn
            try:
                return timeit(lambda: f(a, b, out=c), args.n, sync)
            finally:
                type(f).__call__ = real_call
        return run

    def plain(make):
        def run():
            g = make()
            try:
                return timeit(g, args.n, sync)
            finally:
                fs.objl[:] = [None] * len(fs.objl)
        return run
    rows = {"call": with_source(real_call), "no-is_neg": with_source(no_neg),
            "c-nop": with_call_dl(lambda p, q, r, s: nop(p, q, 0)), "py-nop": with_call_dl(lambda p, q, r, s: 0),
            "one-call": plain(one_call), "fill": plain(fill_only),
            "c-run": plain(lambda: c_run_only(f, a, b, c)), "ctypes-nop": lambda: calibration(args.n),
            "is_neg x1": lambda: timeit(a.is_neg, args.n),
            "torch.add": lambda: timeit(lambda: torch.add(a, b, out=c), args.n, sync)}
    best = {k: float("inf") for k in rows}
    for _ in range(args.rounds):
        for k, run in rows.items():
            best[k] = min(best[k], run())
    print(f"torch {torch.__version__}, {dev} tensors, best of {args.rounds} rounds, us per call")
    for k, v in best.items():
        print(f"  {k:11s} {v:6.2f}")
    print(f"  is_neg x3   {best['call'] - best['no-is_neg']:6.2f}  (call - no-is_neg)")
    print(f"  python      {best['py-nop']:6.2f}  (py-nop: the layer without C)")
    print(f"  foreign     {best['c-nop'] - best['py-nop']:6.2f}  (c-nop - py-nop: one ctypes call)")
    print(f"  in C        {best['call'] - best['c-nop']:6.2f}  (call - c-nop: the fill and the run)")


if __name__ == "__main__":
    main()
