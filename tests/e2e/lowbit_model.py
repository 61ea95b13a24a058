"""lowbit_model.py — an independent model of tessel's low-bit encodings.

Written from the format definitions, not from tessel's C: a value is
decoded from its sign, exponent and mantissa fields by exact arithmetic,
and a float is encoded by searching the format's finite values for the
nearest one (ties to the even code). The C conversion (src/base/
lowbit_conv.h) is checked against it on every code of every format
(test_lowbit_formats.py), and ml_dtypes checks this model where it has the
format. `python3 tests/e2e/lowbit_model.py` prints the value table of
docs/lowbit.md.

Formats: float<N>e<X>m<Y>, N = 1 + X + Y, 3 <= N <= 8, bias 2^(X-1)-1.
float8e4m3 has no infinity and one NaN per sign (all ones, = e4m3fn);
float8e5m2 is IEEE-like (all-ones exponent: infinity or NaN); every other
format is finite only. Encoding: the input is first rounded to float32,
then to the nearest value (ties to even); beyond the largest finite value
(and infinity in a format without it) saturates; NaN becomes the format's
NaN (e5m2: S.11111.10, e4m3: S.1111.111) or +0 when it has none.
"""
import math
import struct
from fractions import Fraction
import bisect
import functools
import sys


def formats():
    """Every low-bit float format as (name, N, X, Y)."""
    out = []
    for n in range(3, 9):
        for x in range(1, n):
            out.append((f"float{n}e{x}m{n - 1 - x}", n, x, n - 1 - x))
    return out


def policy(n, x, y):
    if n == 8 and x == 5:
        return "ieee"
    if n == 8 and x == 4:
        return "fn"
    return "finite"


def decode(n, x, y, code):
    """The value of one code (a Python float; exact for every format)."""
    sign = -1.0 if (code >> (n - 1)) & 1 else 1.0
    e = (code >> y) & ((1 << x) - 1)
    m = code & ((1 << y) - 1)
    bias = (1 << (x - 1)) - 1
    pol = policy(n, x, y)
    if pol == "ieee" and e == (1 << x) - 1:
        return sign * math.inf if m == 0 else math.nan
    if pol == "fn" and e == (1 << x) - 1 and m == (1 << y) - 1:
        return math.nan
    if e == 0:
        return sign * math.ldexp(m, 1 - bias - y)
    return sign * math.ldexp((1 << y) + m, e - bias - y)


@functools.lru_cache(maxsize=None)
def finite_values(n, x, y):
    """(value, code) of every finite non-negative code, ascending."""
    out = []
    for code in range(1 << (n - 1)):
        v = decode(n, x, y, code)
        if math.isfinite(v):
            out.append((v, code))
    return sorted(out)


def f32(v):
    """v rounded to float32, as tessel rounds a wider value before encoding."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def encode(n, x, y, v):
    """The code tessel must produce for the float v."""
    pol = policy(n, x, y)
    sbit = 1 << (n - 1)
    if math.isnan(v):
        s = sbit if math.copysign(1.0, v) < 0 else 0
        if pol == "ieee":
            return s | ((1 << x) - 1) << y | (1 << (y - 1))
        if pol == "fn":
            return s | (1 << (n - 1)) - 1
        return 0
    v = f32(v)
    neg = math.copysign(1.0, v) < 0
    a = abs(v)
    if math.isinf(a) and pol == "ieee":
        return (sbit if neg else 0) | ((1 << x) - 1) << y
    # the nearest of the finite non-negative values (exact distances); a
    # tie goes to the even code; past the largest value, the largest
    vals = finite_values(n, x, y)
    if math.isinf(a) or a >= vals[-1][0]:
        code = vals[-1][1]
    else:
        i = bisect.bisect_left(vals, (a, -1))
        if vals[i][0] == a:
            code = vals[i][1]
        else:
            (lo, clo), (hi, chi) = vals[i - 1], vals[i]
            dl, dh = Fraction(a) - Fraction(lo), Fraction(hi) - Fraction(a)
            code = clo if dl < dh or (dl == dh and clo % 2 == 0) else chi
    return (sbit if neg else 0) | code


def table_markdown():
    """docs/lowbit.md's table: every positive code's value, per format."""
    lines = []
    for name, n, x, y in formats():
        vals = []
        for code in range(1 << (n - 1)):
            v = decode(n, x, y, code)
            vals.append("NaN" if math.isnan(v) else "inf" if math.isinf(v) else repr(v).rstrip("0").rstrip(".") if "e" not in repr(v) else repr(v))
        bias = (1 << (x - 1)) - 1
        lines.append(f"**{name}** (bias {bias}, {policy(n, x, y)}), codes 0..{(1 << (n - 1)) - 1} "
                     f"(the sign bit {1 << (n - 1):#x} negates): " + ", ".join(vals))
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(table_markdown())
