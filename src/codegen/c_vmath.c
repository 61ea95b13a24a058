/* c_vmath.c — float32 exp, log, tanh, sigmoid, erf and float16 rounding
 * for the C target, as branch-free C that the system compiler vectorizes:
 * an elementwise loop calling them (c_emit_ops.c's float forms) inlines
 * them and becomes AVX2 / AVX-512 / NEON code, where libm's scalar calls
 * kept every such loop scalar (softmax 4096x4096 f32: 181 ms against
 * NumPy's 46-59 ms on a 2-core VM).
 *
 * Each function is a range reduction and a polynomial whose coefficients
 * scripts/vmath_fit.py derives (least squares on Chebyshev nodes refined
 * towards minimax, rounded to float32) and whose error it measures in
 * float32 arithmetic over samples of the whole float range. Bounds, in
 * units of the float32 spacing at the exact result (the interpreter's
 * float64 value); build/unit_tests vmath checks them on the code as the C
 * target compiles it:
 *
 *   tsl_expf      <= 2 ulp (fit: 1.2); subnormal results to the spacing of
 *                 subnormals; x > 88.7228394 gives inf, x < -103.972084 0
 *   tsl_logf      <= 2 ulp (fit: 1.02); 0 gives -inf, x < 0 NaN, subnormals exact-scaled
 *   tsl_tanhf     <= 2 ulp (fit: 1.27); +-1 past |x| = 9.1
 *   tsl_sigmoidf  <= 3 ulp (e = tsl_expf(-|x|): 1 / (1 + e), or e / (1 + e)
 *                 for x < 0, so that large negative x gives e^x, not 0)
 *   tsl_erff      <= 2 ulp (fit: 0.84); +-1 past |x| = 3.92
 *   NaN in, NaN out; +-inf the limits.
 *
 * The operations are IEEE single with contraction off (the generated file
 * is compiled -std=c11, and clang with FP_CONTRACT OFF), so a scalar and a
 * vectorized evaluation give the same bits: results do not depend on the
 * machine's vector width. Not a public interface: c.c puts the text at the
 * top of every kernel (the functions are TSL_HELPER: unused ones cost
 * nothing). */
#include "codegen/c_int.h"

const char cgc_vmath_prelude[] =
    "/* ---- float32 transcendentals the compiler vectorizes (codegen/c_vmath.c) ---- */\n"
    "TSL_HELPER float tsl_f32_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n"
    "TSL_HELPER uint32_t tsl_bits_f32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }\n"
    "/* exp: x = k ln2 + r, |r| <= ln2 / 2 (ln2 in two parts: k ln2_hi exact),\n"
    " * e^r = 1 + r + r^2 q(r), times 2^k in two steps (subnormal results rounded once) */\n"
    "TSL_HELPER float tsl_expf(float x)\n"
    "{\n"
    "    float xc = x > 88.7228394f ? 88.7228394f : x;\n"
    "    xc = xc < -103.972084f ? -103.972084f : xc;\n"
    "    float kf = (xc * 1.44269504f + 12582912.0f) - 12582912.0f; /* round to an integer */\n"
    "    kf = kf == kf ? kf : 0.0f;\n"
    "    float r = xc - kf * 0.693145751953125f;\n"
    "    r = r - kf * 1.42860677e-06f;\n"
    "    float q = 0.000198578069f;\n"
    "    q = q * r + 0.001393363f;\n"
    "    q = q * r + 0.00833336078f;\n"
    "    q = q * r + 0.0416664667f;\n"
    "    q = q * r + 0.166666672f;\n"
    "    q = q * r + 0.5f;\n"
    "    float p = 1.0f + r + (r * r) * q;\n"
    "    int32_t k = (int32_t)kf, k1 = k / 2, k2 = k - k1;\n"
    "    float y = (p * tsl_f32_bits((uint32_t)(k1 + 127) << 23)) * tsl_f32_bits((uint32_t)(k2 + 127) << 23);\n"
    "    y = x > 88.7228394f ? (float)INFINITY : y;\n"
    "    return x < -103.972084f ? 0.0f : y;\n"
    "}\n"
    "/* log: x = m 2^e, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) = 2s + s^3 q(s^2),\n"
    " * s = (m - 1) / (m + 1); subnormal x scaled by 2^23 first */\n"
    "TSL_HELPER float tsl_logf(float x)\n"
    "{\n"
    "    int sub = x < 1.17549435e-38f;\n"
    "    float xs = sub ? x * 8388608.0f : x;\n"
    "    uint32_t u = tsl_bits_f32(xs);\n"
    "    int32_t e = (int32_t)((u >> 23) & 0xffu) - 127 - (sub ? 23 : 0);\n"
    "    float m = tsl_f32_bits((u & 0x7fffffu) | 0x3f800000u);\n"
    "    int big = m > 1.41421356f;\n"
    "    m = big ? m * 0.5f : m;\n"
    "    e += big;\n"
    "    float f = m - 1.0f, s = f / (2.0f + f), z = s * s, ef = (float)e;\n"
    "    float q = 0.284039348f;\n"
    "    q = q * z + 0.283278972f;\n"
    "    q = q * z + 0.400025636f;\n"
    "    q = q * z + 0.666666627f;\n"
    "    float lm = (s + s) + (s * z) * q;\n"
    "    float y = ef * 0.693145751953125f + (lm + ef * 1.42860677e-06f);\n"
    "    y = x == 0.0f ? -(float)INFINITY : y;\n"
    "    y = x < 0.0f ? (float)NAN : y;\n"
    "    y = x == (float)INFINITY ? x : y;\n"
    "    return x != x ? x : y;\n"
    "}\n"
    "/* tanh: |x| < 0.625: x + x^3 q(x^2); else sign(x) (1 - 2 / (e^(2|x|) + 1)) */\n"
    "TSL_HELPER float tsl_tanhf(float x)\n"
    "{\n"
    "    float ax = x < 0.0f ? -x : x, z = x * x;\n"
    "    float q = 0.00222430448f;\n"
    "    q = q * z - 0.00828148331f;\n"
    "    q = q * z + 0.0217491835f;\n"
    "    q = q * z - 0.0539567471f;\n"
    "    q = q * z + 0.133332923f;\n"
    "    q = q * z - 0.333333343f;\n"
    "    float small = x + (x * z) * q;\n"
    "    float big = 1.0f - 2.0f / (tsl_expf(ax + ax) + 1.0f);\n"
    "    big = x < 0.0f ? -big : big;\n"
    "    return ax < 0.625f ? small : big;\n"
    "}\n"
    "/* sigmoid: e = e^-|x|, 1 / (1 + e) for x >= 0, e / (1 + e) below (no overflow) */\n"
    "TSL_HELPER float tsl_sigmoidf(float x)\n"
    "{\n"
    "    float e = tsl_expf(x < 0.0f ? x : -x), r = 1.0f / (1.0f + e);\n"
    "    return x < 0.0f ? e * r : r;\n"
    "}\n"
    "/* erf: |x| < 0.875: x + x q(x^2); below 3.92: 1 - e^(-x^2) w(|x| - 0.875); then 1 */\n"
    "TSL_HELPER float tsl_erff(float x)\n"
    "{\n"
    "    float ax = x < 0.0f ? -x : x, z = x * x;\n"
    "    float q = 8.69896612e-05f;\n"
    "    q = q * z - 0.000821654685f;\n"
    "    q = q * z + 0.00520721916f;\n"
    "    q = q * z - 0.0268617738f;\n"
    "    q = q * z + 0.112837367f;\n"
    "    q = q * z - 0.376126349f;\n"
    "    q = q * z + 0.128379166f;\n"
    "    float small = x + x * q;\n"
    "    float t = ax - 0.875f;\n"
    "    float w = 1.40503019e-07f;\n"
    "    w = w * t - 3.16180081e-06f;\n"
    "    w = w * t + 3.27749694e-05f;\n"
    "    w = w * t - 0.000209790785f;\n"
    "    w = w * t + 0.000943900901f;\n"
    "    w = w * t - 0.00324894721f;\n"
    "    w = w * t + 0.00916416943f;\n"
    "    w = w * t - 0.0224355385f;\n"
    "    w = w * t + 0.0496186465f;\n"
    "    w = w * t - 0.100859649f;\n"
    "    w = w * t + 0.187949345f;\n"
    "    w = w * t - 0.315833479f;\n"
    "    w = w * t + 0.46431157f;\n"
    "    float big = ax >= 3.92f ? 1.0f : 1.0f - tsl_expf(-z) * w;\n"
    "    big = x < 0.0f ? -big : big;\n"
    "    return ax < 0.875f ? small : big;\n"
    "}\n"
    "/* x rounded to float16 (to nearest even; subnormals, overflow to inf, NaN\n"
    " * kept), as float: |x| + 2^(max(e, -14) + 13) leaves exactly float16's bits\n"
    " * of |x| (e its exponent), rounded by the addition */\n"
    "TSL_HELPER float tsl_rf16f(float x)\n"
    "{\n"
    "    uint32_t u = tsl_bits_f32(x), a = u & 0x7fffffffu;\n"
    "    int32_t e = (int32_t)(a >> 23) - 127;\n"
    "    e = e < -14 ? -14 : e;\n"
    "    e = e > 15 ? 15 : e;\n"
    "    float m = tsl_f32_bits((uint32_t)(e + 13 + 127) << 23), ax = tsl_f32_bits(a);\n"
    "    float r = (ax + m) - m;\n"
    "    r = r >= 65520.0f ? (float)INFINITY : r;\n"
    "    r = a >= 0x7f800000u ? ax : r;\n"
    "    return tsl_f32_bits(tsl_bits_f32(r) | (u & 0x80000000u));\n"
    "}\n";
