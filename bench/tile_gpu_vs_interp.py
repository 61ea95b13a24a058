"""tile_gpu_vs_interp.py — run one tile kernel on the GPU and on the tile
interpreter with the same fresh random inputs and compare every output.

  python3 bench/tile_gpu_vs_interp.py FILE.tile NAME=d0xd1:dtype ... [--out NAME ...] [--tol T]

Each input is NAME=SHAPE:DTYPE (e.g. A=45x32:float16); the outputs are
named with --out. Prints the largest relative error per output; exit 1 when
one is over the tolerance or has a NaN (tile run poisons outputs first)."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(tessel, tile, target, ins, outs, d):
    cmd = [tessel, "tile", "run", tile, "--target", target]
    for n, p in ins.items():
        cmd += ["--input", f"{n}={p}"]
    paths = {n: os.path.join(d, f"{target}-{n}.npy") for n in outs}
    for n, p in paths.items():
        cmd += ["--output", f"{n}={p}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stdout + r.stderr)
        return None
    return {n: np.load(p).astype(np.float64) for n, p in paths.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tile")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", action="append", required=True)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--tessel", default="build/tessel")
    args = ap.parse_args()
    rng = np.random.default_rng()
    with tempfile.TemporaryDirectory() as d:
        ins = {}
        for spec in args.inputs:
            name, rest = spec.split("=")
            shape, dt = rest.split(":")
            x = rng.uniform(-1, 1, [int(s) for s in shape.split("x")]).astype(dt)
            ins[name] = os.path.join(d, f"{name}.npy")
            np.save(ins[name], x)
        ref = run(args.tessel, args.tile, "interp", ins, args.out, d)
        got = run(args.tessel, args.tile, "cuda", ins, args.out, d)
        if ref is None or got is None:
            print(f"{args.tile}: a run failed")
            return 1
        bad = 0
        for n in args.out:
            err = np.abs(got[n] - ref[n]).max() / max(np.abs(ref[n]).max(), 1e-30)
            nan = int(np.isnan(got[n]).sum())
            bad |= not (err <= args.tol) or nan > 0
            print(f"{os.path.basename(args.tile)} {n}: GPU vs interpreter max rel error {err:.2e}, NaN {nan}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
