/* fma16.h — a*b + c rounded once to a 16-bit float (f16, bf16): the tile
 * IR's `fma` on those dtypes (docs/tile-ir.md, "fma rounds once").
 *
 * Written once as a macro body, as lowbit_conv.h is, so that the same text
 * is compiled into tessel (the tile interpreter) and emitted into the
 * generated C and CUDA sources (the C kernels; the CUDA host emulation):
 * the generators and the interpreter cannot disagree by a bit. `Q` is the
 * function qualifier. Only double, int and math functions appear, and no
 * macro, so the text compiles as C, C++ and CUDA with nothing but math.
 *
 * tsl_fma16(a, b, c, man, emin): a, b, c values of a binary format with
 * `man` mantissa bits and least normal exponent `emin` (f16: 10, -14;
 * bf16: 7, -126), of at most 26 significant bits, so that p = a*b is exact
 * in double. s = fma(a, b, c) is a*b + c rounded to double; rounding s
 * again to the format is wrong only when s lands exactly on a midpoint of
 * the format while a*b + c does not (the tie rule then picks a side the
 * exact value is not on). TwoSum gives the exact error t of s (s + t ==
 * p + c); when s is a midpoint (s / h an odd integer, h half the format's
 * unit at s) and t != 0, s moves one double ulp toward t: onto the exact
 * value's side of the midpoint and nowhere near another. The last rounding
 * quantizes |s| to the format's unit 2^(E - man), E = max(exponent of s,
 * emin), by one double addition of 2^(E + 52 - man) (to nearest even).
 * Returns the rounded value; infinity past the largest finite one
 * (ldexp(1, 1024) overflows), NaN and infinities as fma gives them.
 * TwoSum needs a*b kept apart from the sums: it is compiled without FP
 * contraction (tessel and the C kernels are ISO C, the C prelude says
 * FP_CONTRACT OFF for clang, the emulation is ISO C++); the GPU runs
 * fma.rn instead and never calls it. */
#ifndef TSL_FMA16_H
#define TSL_FMA16_H

#define TSL_FMA16_SRC(Q)                                                                         \
    Q double tsl_fma16(double a, double b, double c, int man, int emin)                          \
    {                                                                                            \
        double p = a * b, s = fma(a, b, c);                                                      \
        double cs = s - p, ps = s - cs, t = (p - ps) + (c - cs);                                 \
        int e;                                                                                   \
        if (s - s != 0) return s;                                                                \
        frexp(s, &e);                                                                            \
        double h = ldexp(1.0, (e - 1 > emin ? e - 1 : emin) - man - 1), q = s / h;               \
        if (t != 0 && q == trunc(q) && fmod(q, 2.0) != 0)                                        \
            s = nextafter(s, t > 0 ? 1e300 : -1e300);                                            \
        frexp(s, &e);                                                                            \
        double m = ldexp(1.0, (e - 1 > emin ? e - 1 : emin) + 52 - man);                         \
        double r = (fabs(s) + m) - m;                                                            \
        if (r >= ldexp(1.0, 2 - emin)) r = ldexp(1.0, 1024);                                     \
        return copysign(r, s);                                                                   \
    }

#define TSL_FMA16_STR_(...) #__VA_ARGS__
#define TSL_FMA16_STR(...) TSL_FMA16_STR_(__VA_ARGS__)

#endif
