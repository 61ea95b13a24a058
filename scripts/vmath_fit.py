#!/usr/bin/env python3
"""vmath_fit.py — derives the polynomial coefficients of the C target's
float32 transcendentals (src/codegen/c_vmath.c) and measures, in float32
arithmetic step by step (NumPy float32 operations are IEEE single), their
error against float64 over samples of the whole float range.

Each polynomial is fitted in float64 by least squares at Chebyshev nodes on
the relative error, then refined by iteratively reweighted least squares
(Lawson's algorithm, which tends to the minimax polynomial), and its
coefficients are rounded to float32. Run it to reproduce the tables in
c_vmath.c; `--check` only measures.

    python3 scripts/vmath_fit.py            # fit, print C coefficients and errors
"""
import math
import sys

import numpy as np

F = np.float32


def cheb_nodes(a, b, n):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n))


def fit(func, basis, a, b, rel=True, n=4000, iters=60):
    """Coefficients c minimizing max |sum c_j basis_j(t) - func(t)| (relative
    to func when rel) on [a, b] (Lawson's reweighting)."""
    t = cheb_nodes(a, b, n)
    y = func(t)
    A = np.stack([g(t) for g in basis], axis=1)
    scale = np.abs(y) if rel else np.ones_like(y)
    A = A / scale[:, None]
    yy = y / scale
    w = np.ones(n) / n
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(A * sw[:, None], yy * sw, rcond=None)
        err = np.abs(A @ c - yy)
        w = w * err
        s = w.sum()
        if s == 0:
            break
        w /= s
    return c


def ulps(got, want):
    """|got - want| in units of the float32 spacing at want (want float64)."""
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    wf = np.abs(want).astype(np.float32)
    sp = np.spacing(np.maximum(wf, F(np.finfo(np.float32).tiny))).astype(np.float64)
    return np.abs(got - want) / sp


def horner(coef, x):
    acc = F(coef[-1]) * np.ones_like(x)
    for c in coef[-2::-1]:
        acc = (acc * x + F(c)).astype(F)
    return acc


def samples(lo, hi, n=1 << 20):
    """float32 values covering [lo, hi]: every k-th bit pattern of both signs."""
    a = np.arange(0, 0x7f800000, max(1, 0x7f800000 // n), dtype=np.uint32).view(np.float32)
    a = np.concatenate([a, -a])
    return a[(a >= lo) & (a <= hi)]


# ---- exp ---------------------------------------------------------------------------
LN2_HI, LN2_LO = F(0.693145751953125), F(1.428606765330187e-06)


def exp_f32(x, c):
    x = x.astype(F)
    xc = np.clip(x, F(-103.972084), F(88.7228394))
    kf = ((xc * F(1.44269504)).astype(F) + F(12582912.0)).astype(F) - F(12582912.0)
    r = (xc - (kf * LN2_HI).astype(F)).astype(F)
    r = (r - (kf * LN2_LO).astype(F)).astype(F)
    p = (F(1) + r + (r * r).astype(F) * horner(c, r)).astype(F)
    k = kf.astype(np.int64)
    k1 = k >> 1
    k2 = k - k1
    s1 = np.ldexp(F(1), k1).astype(F)
    s2 = np.ldexp(F(1), k2).astype(F)
    y = ((p * s1).astype(F) * s2).astype(F)
    y = np.where(x > F(88.7228394), F(np.inf), y)
    return np.where(x < F(-103.972084), F(0), y).astype(F)


def fit_exp(deg):
    # e^r = 1 + r + r^2 q(r), |r| <= ln2/2 (a little more: k rounds x*log2e)
    q = fit(lambda t: (np.expm1(t) - t) / (t * t), [lambda t, j=j: t ** j for j in range(deg - 1)],
            -0.3467, 0.3467, rel=True)
    return [float(F(v)) for v in q]


# ---- log ---------------------------------------------------------------------------
def log_f32(x, c):
    x = x.astype(F)
    sub = (x < F(1.17549435e-38)) & (x > 0)
    xs = np.where(sub, (x * F(8388608.0)).astype(F), x)
    u = xs.view(np.uint32).astype(np.int64)
    e = ((u >> 23) & 0xff) - 127 - np.where(sub, 23, 0)
    m = ((u & 0x7fffff) | 0x3f800000).astype(np.uint32).view(F)
    big = m > F(1.41421356)
    m = np.where(big, (m * F(0.5)).astype(F), m)
    e = e + big
    f = (m - F(1)).astype(F)
    s = (f / (F(2) + f).astype(F)).astype(F)
    z = (s * s).astype(F)
    ef = e.astype(F)
    lm = ((s + s).astype(F) + ((s * z).astype(F) * horner(c, z)).astype(F)).astype(F)
    y = ((ef * LN2_HI).astype(F) + (lm + (ef * LN2_LO).astype(F)).astype(F)).astype(F)
    y = np.where(x == 0, F(-np.inf), y)
    y = np.where(x < 0, F(np.nan), y)
    return np.where(np.isposinf(x), F(np.inf), y).astype(F)


def fit_log(deg):
    # log(1+f) = 2 atanh(s) = 2s + s^3 q(s^2), s = f / (2 + f), |s| <= 0.1716
    q = fit(lambda z: (2 * np.arctanh(np.sqrt(z)) - 2 * np.sqrt(z)) / (np.sqrt(z) ** 3),
            [lambda z, j=j: z ** j for j in range(deg)], 1e-12, 0.1716 ** 2, rel=True)
    return [float(F(v)) for v in q]


# ---- tanh --------------------------------------------------------------------------
TANH_SMALL = 0.625


def tanh_f32(x, c, ce):
    x = x.astype(F)
    ax = np.abs(x)
    z = (x * x).astype(F)
    small = (x + ((x * z).astype(F) * horner(c, z)).astype(F)).astype(F)
    e = exp_f32((ax + ax).astype(F), ce)
    big = (F(1) - (F(2) / (e + F(1)).astype(F)).astype(F)).astype(F)
    big = np.where(x < 0, -big, big)
    return np.where(ax < F(TANH_SMALL), small, big).astype(F)


def fit_tanh(deg):
    q = fit(lambda z: (np.tanh(np.sqrt(z)) - np.sqrt(z)) / np.sqrt(z) ** 3,
            [lambda z, j=j: z ** j for j in range(deg)], 1e-12, TANH_SMALL ** 2, rel=True)
    return [float(F(v)) for v in q]


# ---- erf ---------------------------------------------------------------------------
ERF_SMALL, ERF_ONE = 0.875, 3.92


def erf_f32(x, cs, cb, ce):
    x = x.astype(F)
    ax = np.abs(x)
    z = (x * x).astype(F)
    small = (x + (x * horner(cs, z)).astype(F)).astype(F)
    # erf = 1 - exp(-x^2) w(|x|) on [ERF_SMALL, ERF_ONE]
    w = horner(cb, (ax - F(ERF_SMALL)).astype(F))
    big = (F(1) - (exp_f32(-z, ce) * w).astype(F)).astype(F)
    big = np.where(ax >= F(ERF_ONE), F(1), big)
    big = np.where(x < 0, -big, big)
    return np.where(ax < F(ERF_SMALL), small, big).astype(F)


def fit_erf(ds, db):
    from math import erf as merf, erfc as merfc
    verf = np.vectorize(merf)
    verfc = np.vectorize(merfc)
    # erf(x) = x + x q(x^2): q = erf(x)/x - 1 (about 0.128 at 0), relative to erf(x)/x
    cs = fit(lambda z: verf(np.sqrt(z)) / np.sqrt(z) - 1, [lambda z, j=j: z ** j for j in range(ds)], 1e-12,
             ERF_SMALL ** 2, rel=False)
    cb = fit(lambda t: verfc(t + ERF_SMALL) * np.exp((t + ERF_SMALL) ** 2),
             [lambda t, j=j: t ** j for j in range(db)], 0, ERF_ONE - ERF_SMALL, rel=True)
    return [float(F(v)) for v in cs], [float(F(v)) for v in cb]


def report(name, got, want, x):
    with np.errstate(over="ignore"):
        finite = np.isfinite(np.asarray(want).astype(F))
    want = np.where(finite, want, 0)
    u = ulps(got, want)
    bad = ~np.isfinite(got) & finite
    wrong = int((np.isfinite(got) & ~finite).sum())  # finite where the result overflows
    i = int(np.argmax(np.where(finite, u, 0)))
    print(f"  {name}: max {u[finite].max():.2f} ulp at x = {x[i]!r}, mean {u[finite].mean():.3f}; "
          f"{int(bad.sum())} non-finite where the result is finite, {wrong} finite where it is not")
    return float(u[finite].max())


def main():
    check_only = "--check" in sys.argv
    ce = fit_exp(7)
    cl = fit_log(4)
    ct = fit_tanh(6)
    cs, cb = fit_erf(7, 13)
    if not check_only:
        for nm, c in (("exp q(r)", ce), ("log q(z)", cl), ("tanh q(z)", ct), ("erf small", cs), ("erf big", cb)):
            print(f"{nm}: {{" + ", ".join(f"{v!r}f" for v in c) + "}")
    x = samples(-110, 100)
    report("exp", exp_f32(x, ce), np.exp(x.astype(np.float64)), x)
    x = samples(0, 3.4e38)
    x = x[x > 0]
    report("log", log_f32(x, cl), np.log(x.astype(np.float64)), x)
    x = samples(-20, 20)
    report("tanh", tanh_f32(x, ct, ce), np.tanh(x.astype(np.float64)), x)
    from math import erf as merf
    x = samples(-6, 6)
    report("erf", erf_f32(x, cs, cb, ce), np.vectorize(merf)(x.astype(np.float64)), x)
    return 0


if __name__ == "__main__":
    sys.exit(main())
