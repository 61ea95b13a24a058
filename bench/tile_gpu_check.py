"""tile_gpu_check.py — run a hand-written tile GEMM on the GPU through
`tessel tile run --target cuda` and check it against NumPy (float64).

  python3 bench/tile_gpu_check.py examples/tile/gemm_wgmma.tile M N K [--reps R] [--dtype f16]

Inputs are fresh random normals; the output is poisoned by tile run before
the launch, so an unwritten element shows as NaN. Prints the relative L2
error and, with --reps, the median time and TFLOP/s of R more launches.
Exit status 1 when the error is over 1e-2."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tile")
    ap.add_argument("M", type=int)
    ap.add_argument("N", type=int)
    ap.add_argument("K", type=int)
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--tessel", default="build/tessel")
    args = ap.parse_args()
    rng = np.random.default_rng()
    a = rng.standard_normal((args.M, args.K)).astype(np.float16)
    b = rng.standard_normal((args.K, args.N)).astype(np.float16)
    with tempfile.TemporaryDirectory() as d:
        pa, pb, pc = (os.path.join(d, n) for n in ("a.npy", "b.npy", "c.npy"))
        np.save(pa, a)
        np.save(pb, b)
        cmd = [args.tessel, "tile", "run", args.tile, "--target", args.target, "--input", f"A={pa}",
               "--input", f"B={pb}", "--output", f"C={pc}"]
        if args.reps:
            cmd += ["--reps", str(args.reps)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode:
            print(f"{args.tile} {args.M}x{args.N}x{args.K}: tessel tile run failed ({r.returncode})")
            return 1
        c = np.load(pc).astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.linalg.norm(c - ref) / max(np.linalg.norm(ref), 1e-30)
    nan = int(np.isnan(c).sum())
    msg = f"{args.tile} {args.M}x{args.N}x{args.K} on {args.target}: rel L2 error {err:.2e}, NaN {nan}"
    m = re.search(r"median of \d+ launches: ([0-9.]+) ms", r.stdout)
    if m:
        ms = float(m.group(1))
        msg += f"; {ms:.3f} ms, {2 * args.M * args.N * args.K / (ms * 1e-3) / 1e12:.1f} TFLOP/s"
    print(msg)
    return 0 if err < 1e-2 and not nan else 1


if __name__ == "__main__":
    sys.exit(main())
