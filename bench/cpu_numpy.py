"""cpu_numpy.py — NumPy's side of bench/cpu.sh's sum and softmax rows,
measured in the same run as tessel's (NumPy runs these on one core):

    python3 bench/cpu_numpy.py SUM_NPY

prints `numpy op sum <ms> <GB/s> <runs>`, `numpy err sum <relative
error>` (np.sum of float32, against a compensated double sum) and
`numpy op softmax <ms> <GB/s> <runs>` (4096x4096 float32, max-subtracted,
as the tessel program computes it), and writes the sum's 1e8 float32
input to SUM_NPY so that tessel's sum reads the same values. Values are
+-[0.1, 1], never zero, like cpu_bench's. Times: median of 5 after a
warm-up."""
import sys
import time

import numpy as np


def timed(fn, runs=5):
    fn()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return sorted(t)[len(t) // 2]


def softmax(x):
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(20261124)
    n = 100_000_000
    x = (rng.uniform(0.1, 1.0, n) * rng.choice(np.array([-1.0, 1.0]), n)).astype(np.float32)
    if len(sys.argv) > 1:
        np.save(sys.argv[1], x)
    t = timed(lambda: np.sum(x))
    print(f"numpy op sum {t * 1e3:.3f} {x.nbytes / t / 1e9:.2f} GB/s 5")
    exact = float(np.sum(x.astype(np.float64)))  # pairwise in double: ~1e-16 of sum |x|
    got = float(np.sum(x))
    print(f"numpy err sum {abs(got - exact) / abs(exact):.3g}")
    del x
    s = (rng.uniform(0.1, 1.0, (4096, 4096)) * rng.choice(np.array([-1.0, 1.0]), (4096, 4096))).astype(np.float32)
    t = timed(lambda: softmax(s))
    print(f"numpy op softmax {t * 1e3:.3f} {2 * s.nbytes / t / 1e9:.2f} GB/s 5")


if __name__ == "__main__":
    main()
