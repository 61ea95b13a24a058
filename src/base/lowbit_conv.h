/* lowbit_conv.h — the one conversion between float32 and the low-bit
 * floats (float<N>e<X>m<Y>, N <= 8), and the read of one packed element.
 *
 * Written once as a macro body so that the same text is compiled into
 * tessel (base/dtype.c, for both interpreters and pack/unpack) and emitted
 * verbatim into every generated C and CUDA file (lowbit/emit.c): the
 * generators and the interpreters cannot disagree by a bit. `Q` is the
 * function qualifier (`static inline`, `static __device__ __forceinline__`).
 * Only `unsigned`, `int`, `long long` and `float` appear, so the text
 * needs no header in either language.
 *
 * Parameters of a format: E exponent bits, M mantissa bits, B bias, S the
 * special-value policy (DT_SPECIAL_*: 0 finite only, 1 NaN = all ones and
 * no infinity (float8e4m3 = e4m3fn), 2 IEEE: exponent all ones is infinity
 * (mantissa 0) or NaN (float8e5m2)).
 *
 * tsl_lbdec(code): exact; the value (m | 1<<M) * 2^(e-B-M) (e = 0:
 *   m * 2^(1-B-M)) is built as an int-to-float conversion and a scale by a
 *   power of two, so no float32 subnormal appears (flush-to-zero safe).
 * tsl_lbenc(x): round to nearest on the float32 bits, a tie to the even
 *   code (IEEE's even significand; with no mantissa bits, the even
 *   exponent); a result past
 *   the largest finite value (and an infinity, in a format without one)
 *   saturates to the largest finite value; NaN becomes the format's NaN
 *   (sign kept; e5m2 S.11111.10, e4m3 S.1111.111) or +0 when it has none.
 * tsl_lbget(p, e, bits): bits [e*bits, (e+1)*bits) of the byte array p,
 *   bit 0 the lowest bit of p[0]; an element may straddle two bytes. */
#ifndef TSL_LOWBIT_CONV_H
#define TSL_LOWBIT_CONV_H

#define TSL_LOWBIT_CONV_SRC(Q)                                                                   \
    Q float tsl_lbdec(unsigned c, int E, int M, int B, int S)                                    \
    {                                                                                            \
        union { float f; unsigned u; } r, sc;                                                    \
        unsigned mm = (1u << M) - 1u, mag = c & ((1u << (E + M)) - 1u), e = mag >> M;            \
        if (S == 2 && e == (1u << E) - 1u) {                                                     \
            r.u = 0x7f800000u | (mag & mm) << (23 - M);                                          \
        } else if (S == 1 && mag == (1u << (E + M)) - 1u) {                                      \
            r.u = 0x7fc00000u;                                                                   \
        } else {                                                                                 \
            sc.u = (unsigned)(127 + (e ? (int)e : 1) - B - M) << 23;                             \
            r.f = (float)(e ? (mag & mm) | (1u << M) : mag) * sc.f;                              \
        }                                                                                        \
        r.u |= ((c >> (E + M)) & 1u) << 31;                                                      \
        return r.f;                                                                              \
    }                                                                                            \
    Q unsigned tsl_lbenc(float x, int E, int M, int B, int S)                                    \
    {                                                                                            \
        union { float f; unsigned u; } v;                                                        \
        v.f = x;                                                                                 \
        unsigned sign = (v.u >> 31) << (E + M), a = v.u & 0x7fffffffu;                           \
        unsigned emax = (1u << E) - 1u, mm = (1u << M) - 1u;                                     \
        unsigned maxc = S == 2 ? ((emax - 1u) << M) | mm                                         \
                      : S == 1 ? (emax << M) | (mm - 1u) : (emax << M) | mm;                     \
        if (a > 0x7f800000u)                                                                     \
            return S == 2 ? sign | (emax << M) | (mm & ~(mm >> 1))                               \
                 : S == 1 ? sign | (emax << M) | mm : 0u;                                        \
        if (a == 0x7f800000u && S == 2) return sign | (emax << M);                               \
        int ef = (int)(a >> 23), et = ef - 127 + B;                                              \
        if (ef == 0) return sign;                                                                \
        int shift = 23 - M + (et < 1 ? 1 - et : 0);                                              \
        if (shift > 24) return sign;                                                             \
        unsigned full = (a & 0x7fffffu) | 0x800000u, q = full >> shift;                          \
        unsigned rem = full & ((1u << shift) - 1u), half = 1u << (shift - 1);                    \
        if (et > 1) q += (unsigned)(et - 1) << M;                                                \
        q += rem > half || (rem == half && (q & 1u));                                            \
        return sign | (q > maxc ? maxc : q);                                                     \
    }                                                                                            \
    Q unsigned tsl_lbget(const unsigned char *p, long long e, int bits)                          \
    {                                                                                            \
        unsigned long long b = (unsigned long long)e * (unsigned)bits;                           \
        const unsigned char *q = p + (b >> 3);                                                   \
        unsigned s = (unsigned)(b & 7u), w = q[0];                                               \
        if (s + (unsigned)bits > 8u) w |= (unsigned)q[1] << 8;                                   \
        return (w >> s) & ((1u << bits) - 1u);                                                   \
    }

#define TSL_LOWBIT_STR_(...) #__VA_ARGS__
#define TSL_LOWBIT_STR(...) TSL_LOWBIT_STR_(__VA_ARGS__)

#endif
