"""tile_pipeline_gpu.py — the two expansions of `pipeline` on the GPU
(docs/tile-ir.md section 5): every pipeline program runs through
`tessel tile run --target cuda` in its TMA form (`--arch sm_90a`) and its
cp.async form (`--arch sm_80`, compiled for the device all the same), on
the same fresh random inputs, at sizes no tile divides, with global rows
16-byte aligned (TMA) and not (the cp.async arm of the size branch). Each
GPU output is compared with the tile interpreter's (the oracle, TMA form)
and, for the GEMMs, with NumPy in float64. Outputs are poisoned (NaN)
before each run, so an unwritten element fails.

  python3 bench/tile_pipeline_gpu.py [--only SUBSTRING] [--reps R] [--tessel build/tessel]
                                     [--target interp]   (the script itself, without a GPU)

With --reps, the GEMMs are also timed at 4096^3 in both forms beside the
hand-written examples/tile/gemm_wgmma.tile (median of R launches).
Prints one line per check and `N passed, N failed`; exit status 1 on any
failure."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

F16, F32 = np.float16, np.float32


def gemm(dt_out):
    """inputs and output of C = A B (A [M, K], B [K, N] f16)"""
    return (lambda s: {"A": ((s["M"], s["K"]), F16), "B": ((s["K"], s["N"]), F16)},
            {"C": dt_out}, "gemm")


# program, (inputs from sizes, outputs, reference), sizes (dicts)
PROGS = [
    ("examples/tile/gemm_wgmma_pipeline.tile", gemm(F16),
     [dict(M=100, N=264, K=520), dict(M=1, N=8, K=8), dict(M=300, N=520, K=200), dict(M=129, N=8, K=1032)]),
    ("tests/tile_pipeline/gemm_tma.tile", gemm(F32),
     [dict(M=100, N=72, K=200), dict(M=100, N=70, K=203), dict(M=1, N=8, K=8), dict(M=257, N=136, K=64)]),
    ("tests/tile_pipeline/gemm_tma_persistent.tile", gemm(F32),
     [dict(M=70, N=136, K=136), dict(M=70, N=130, K=131), dict(M=1, N=8, K=8)]),
    ("tests/tile_golden/gemm_pipelined.tile", gemm(F32),
     [dict(M=67, N=72, K=40), dict(M=67, N=45, K=40), dict(M=1, N=8, K=8), dict(M=300, N=264, K=520)]),
    ("tests/tile_pipeline/bias_add.tile",
     (lambda s: {"X": ((s["M"], s["N"]), F32), "V": ((1, s["N"]), F32)}, {"O": F32}, "bias"),
     [dict(M=70, N=100), dict(M=70, N=99), dict(M=1, N=4)]),
    ("tests/tile_pipeline/role_single.tile",
     (lambda s: {"X": ((s["M"], s["N"]), F16)}, {"Y": F16}, "twice"),
     [dict(M=45, N=200), dict(M=45, N=199), dict(M=1, N=8)]),
    ("examples/tile/blocked_sum.tile",
     (lambda s: {"x": ((s["R"], s["M"], s["N"]), F32)}, {"o": F32}, "sum"),
     [dict(R=3, M=37, N=68), dict(R=3, M=37, N=45), dict(R=1, M=1, N=4)]),
]


def reference(kind, ins):
    if kind == "gemm":
        return {"C": ins["A"].astype(np.float64) @ ins["B"].astype(np.float64)}
    if kind == "bias":
        return {"O": ins["X"].astype(np.float64) + ins["V"].astype(np.float64)}
    if kind == "twice":
        return {"Y": 2 * ins["X"].astype(np.float64)}
    return {"o": ins["x"].astype(np.float64).sum(axis=0)}


def run(tessel, prog, ins, outs, d, extra):
    """tessel tile run; returns ({name: array}, stdout) or (None, error text)"""
    cmd = [tessel, "tile", "run", prog]
    for name, arr in ins.items():
        path = os.path.join(d, f"in_{name}.npy")
        np.save(path, arr)
        cmd += ["--input", f"{name}={path}"]
    paths = {}
    for name in outs:
        paths[name] = os.path.join(d, f"out_{name}.npy")
        if os.path.exists(paths[name]):
            os.remove(paths[name])
        cmd += ["--output", f"{name}={paths[name]}"]
    r = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=600)
    if r.returncode:
        return None, (r.stderr or r.stdout).strip().splitlines()[0] if (r.stderr or r.stdout).strip() else "failed"
    return {n: np.load(p) for n, p in paths.items()}, r.stdout


def rel_err(got, want):
    got = got.astype(np.float64)
    if np.isnan(got).any():
        return float("inf")
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--tessel", default="build/tessel")
    ap.add_argument("--target", default="cuda", help="interp: check this script without a GPU")
    args = ap.parse_args()
    rng = np.random.default_rng()
    passed = failed = 0

    def report(ok, msg):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(("ok   " if ok else "FAIL ") + msg, flush=True)

    with tempfile.TemporaryDirectory() as d:
        for prog, (mk, outs, kind), sizes in PROGS:
            if args.only not in prog:
                continue
            for s in sizes:
                ins = {n: rng.uniform(-1, 1, shape).astype(dt) for n, (shape, dt) in mk(s).items()}
                want = reference(kind, ins)
                tag = f"{prog} {' '.join(f'{k}={v}' for k, v in s.items())}"
                interp, err = run(args.tessel, prog, ins, outs, d, ["--arch", "sm_90a"])
                if interp is None:
                    report(False, f"{tag} interpreter: {err}")
                    continue
                for arch in ("sm_90a", "sm_80"):
                    if arch == "sm_80" and "wgmma_pipeline" in prog:
                        continue  # two consumer warpgroups: the TMA form only
                    got, err = run(args.tessel, prog, ins, outs, d, ["--target", args.target, "--arch", arch])
                    if got is None:
                        report(False, f"{tag} GPU {arch} form: {err}")
                        continue
                    for name in outs:
                        e_np = rel_err(got[name], want[name])
                        e_in = rel_err(got[name], interp[name].astype(np.float64))
                        tol = 1e-2 if outs[name] == F16 else 1e-4
                        report(e_np < tol and e_in < tol,
                               f"{tag} GPU {arch} form '{name}': rel L2 error {e_np:.2e} (NumPy), {e_in:.2e} (interpreter)")
        if args.reps:
            n = 4096
            a = rng.standard_normal((n, n)).astype(F16)
            b = rng.standard_normal((n, n)).astype(F16)
            want = a.astype(np.float64) @ b.astype(np.float64)
            for prog, arch in (("examples/tile/gemm_wgmma.tile", "sm_90a"),
                               ("examples/tile/gemm_wgmma_pipeline.tile", "sm_90a"),
                               ("tests/tile_pipeline/gemm_tma.tile", "sm_90a"),
                               ("tests/tile_pipeline/gemm_tma.tile", "sm_80")):
                if args.only not in prog:
                    continue
                got, out = run(args.tessel, prog, {"A": a, "B": b}, ["C"], d,
                               ["--target", args.target, "--arch", arch, "--reps", str(args.reps)])
                if got is None:
                    report(False, f"{prog} {n}^3 {arch} form: {out}")
                    continue
                m = re.search(r"median of \d+ launches: ([0-9.]+) ms", out)
                ms = float(m.group(1)) if m else float("nan")
                e = rel_err(got["C"], want)
                report(e < 1e-2, f"{prog} {n}^3 {arch} form: rel L2 error {e:.2e}; {ms:.3f} ms, "
                                 f"{2 * n ** 3 / (ms * 1e-3) / 1e12:.1f} TFLOP/s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
