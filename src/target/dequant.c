/* dequant.c — the CUDA target's low-bit -> float conversion rows and their
 * semantics (dequant.h). The integer rows use the magic-number trick: the
 * f16 with exponent bits 0x6400 (1024) and a code c of at most 10 bits in
 * its mantissa is 1024 + c exactly, so one lop3 (or prmt for whole bytes)
 * builds two such halves from a packed word and one sub.f16x2 removes the
 * 1024; a signed code is first made offset-binary (its sign bit flipped,
 * inside the same lop3) and 1024 + 2^(N-1) removed. The float row moves a
 * code's sign and exponent|mantissa bits into f16's fields, which is the
 * value times 2^(bias - 15), and one mul.f16x2 by 2^(15 - bias) scales
 * it back; both steps are exact for every format whose values are all
 * f16s (checked per format, below). To f32: the 2^23 magic, whose lop3
 * puts the mask and the magic of an unsigned field inside its word in one
 * instruction, and tsl_lbdec. Rows are tried in order. */
#include <string.h>

#include "target/dequant.h"

#define INTS (1u << DT_UINT | 1u << DT_INT)
#define FLOATS (1u << DT_FLOAT)
#define W(n) (1u << (n))

const target_dequant target_dequant_rows[] = {
    {"dequant.prmt.f16x2", TARGET_DQ_PRMT, INTS, W(8), 16, "prmt.b32 %0, %1, %2, %3;", "sub.f16x2 %0, %1, %2;",
     "whole bytes: two under 0x64 per prmt, minus 1024 (+128 for int8, its sign bits flipped first)"},
    {"dequant.lop3.f16x2", TARGET_DQ_LOP3, INTS, W(1) | W(2) | W(4), 16, "lop3.b32 %0, %1, %2, %3, %4;",
     "sub.f16x2 %0, %1, %2;", "fields i and i + 16/N of a word masked under 0x6400 by one lop3, minus 1024 (+2^(N-1))"},
    {"dequant.pair.f16x2", TARGET_DQ_PAIR, INTS, W(1) | W(2) | W(3) | W(4) | W(5) | W(6) | W(7) | W(8), 16,
     "lop3.b32 %0, %1, %2, %3, %4;", "sub.f16x2 %0, %1, %2;",
     "two neighbouring fields side by side in one word (shifts, a funnel shift where one straddles), then as "
     "dequant.lop3"},
    {"dequant.float.f16x2", TARGET_DQ_FLOAT, FLOATS, W(3) | W(4) | W(5) | W(6) | W(7) | W(8), 16, NULL,
     "mul.f16x2 %0, %1, %2;",
     "sign and exponent|mantissa shifted into f16's fields, times 2^(15 - bias); float8e4m3's NaN code fixed up"},
    {"dequant.magic.f32", TARGET_DQ_MAGIC32, INTS, W(1) | W(2) | W(3) | W(4) | W(5) | W(6) | W(7) | W(8), 32,
     "lop3.b32 %0, %1, %2, %3, 0xea;", NULL,
     "the f32 2^23 + c (field | 0x4B000000: mask and magic in one lop3) minus 2^23; signed: sign-extended, "
     "1.5 * 2^23"},
    {"dequant.lbdec.f32", TARGET_DQ_DEC32, FLOATS, W(3) | W(4) | W(5) | W(6) | W(7) | W(8), 32, NULL, NULL,
     "lowbit_conv.h's tsl_lbdec: the significand as an integer times a power of two (no f32 subnormal)"},
};
const int target_dequant_nrows = (int)TSL_COUNTOF(target_dequant_rows);

static int is_f16(dtype_desc y) { return y.kind == DT_FLOAT && y.bits == 16 && y.exp == 5; }
static int is_f32(dtype_desc y) { return y.kind == DT_FLOAT && y.bits == 32 && y.exp == 8; }

/* Every value of low-bit float q is an f16 (NaN to NaN, inf to inf) and the
 * placement works (exponent field at most 5 bits). */
static int float_fits_f16(dtype_desc q)
{
    if (q.exp > 5 || q.man > 10) return 0;
    for (uint32_t c = 0; c < (1u << q.bits); c++) {
        float v = dtype_lowfloat_decode(q, c);
        if (v != v) continue;
        if (f16_to_f32(f32_to_f16(v)) != v) return 0;
    }
    /* a finite-only format with X = 5 reaches exponent field 31 (f16's
     * infinity): excluded by the check above (its values pass 65504) */
    return 1;
}

const target_dequant *target_dequant_find(dtype_desc q, dtype_desc y)
{
    if (q.bits < 1 || q.bits > 8 || q.kind == DT_BOOL) return NULL;
    if (q.kind == DT_FLOAT && !dtype_desc_is_lowfloat(q)) return NULL;
    int out = is_f16(y) ? 16 : is_f32(y) ? 32 : 0;
    for (int i = 0; out && i < target_dequant_nrows; i++) {
        const target_dequant *r = &target_dequant_rows[i];
        if (r->out_bits != out || !(r->kinds & (1u << q.kind)) || !(r->widths & W(q.bits))) continue;
        if (r->how == TARGET_DQ_FLOAT && !float_fits_f16(q)) continue;
        return r;
    }
    return NULL;
}

void target_dequant_pair(const target_dequant *r, dtype_desc q, int64_t l, int64_t n, int64_t *partner, int *hi)
{
    *hi = 0;
    *partner = -1;
    switch (r->how) {
    case TARGET_DQ_LOP3: {
        int64_t E = 32 / q.bits, H = 16 / q.bits, i = l % E;
        *hi = i >= H;
        *partner = *hi ? l - H : l + H;
        break;
    }
    case TARGET_DQ_PRMT:
    case TARGET_DQ_PAIR:
    case TARGET_DQ_FLOAT:
        *hi = (int)(l & 1);
        *partner = *hi ? l - 1 : l + 1;
        break;
    default:
        break;
    }
    (void)n;
}

/* ---- the instructions, as the hardware computes them ------------------------------------ */

static uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, unsigned lut)
{
    uint32_t r = 0;
    for (unsigned i = 0; i < 8; i++)
        if (lut >> i & 1) r |= (i & 4 ? a : ~a) & (i & 2 ? b : ~b) & (i & 1 ? c : ~c);
    return r;
}

/* prmt.b32 d, a, b, sel (default mode): byte k of d is byte sel[k] of {b, a} */
static uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel)
{
    uint64_t x = (uint64_t)b << 32 | a;
    uint32_t d = 0;
    for (int k = 0; k < 4; k++) d |= (uint32_t)(x >> 8 * ((sel >> 4 * k) & 7) & 0xff) << 8 * k;
    return d;
}

/* f16x2 arithmetic, round to nearest even per half (via f32: exact for
 * one +, - or * of two f16s) */
static uint32_t h2op(uint32_t a, uint32_t b, int mul)
{
    uint32_t r = 0;
    for (int h = 0; h < 2; h++) {
        float x = f16_to_f32((uint16_t)(a >> 16 * h)), y = f16_to_f32((uint16_t)(b >> 16 * h));
        r |= (uint32_t)f32_to_f16(mul ? x * y : x - y) << 16 * h;
    }
    return r;
}

/* bits [l*N, (l+1)*N) of the stream */
static uint32_t field(const uint32_t *w, int64_t l, int N)
{
    int64_t off = l * N, j = off / 32, sh = off % 32;
    uint64_t two = (uint64_t)w[j + 1] << 32 | w[j];
    return (uint32_t)(two >> sh) & ((1u << N) - 1u);
}

void target_dequant_lop3(dtype_desc q, uint32_t *mask, uint32_t *magic, unsigned *lut)
{
    uint32_t m = (1u << q.bits) - 1u, sb = q.kind == DT_INT ? 1u << (q.bits - 1) : 0;
    *mask = m | m << 16;
    *magic = 0x64006400u | sb | sb << 16;
    *lut = q.kind == DT_INT ? 0x6A : 0xEA; /* (a & b) ^ c : (a & b) | c */
}

uint32_t target_dequant_f16x2(dtype_desc q)
{
    uint32_t h;
    if (q.kind == DT_FLOAT) {
        if (q.bias == 15) return 0;
        h = (uint32_t)(30 - q.bias) << 10; /* 2^(15 - bias) */
    } else {
        h = 0x6400u + (q.kind == DT_INT ? 1u << (q.bits - 1) : 0u); /* 1024 (+ 2^(N-1)) */
    }
    return h | h << 16;
}

uint32_t target_dequant_prmt_sel(int k) { return k ? 0x4342u : 0x4140u; }

uint32_t target_dequant_place(dtype_desc q, uint32_t c)
{
    int n = q.bits - 1;
    return (c >> n & 1u) << 15 | (c & ((1u << n) - 1u)) << (10 - q.man);
}

/* the f16x2 register of the pair whose low slot is a */
static uint32_t pair_reg(const target_dequant *r, dtype_desc q, const uint32_t *w, int64_t a)
{
    uint32_t mask, magic, x;
    unsigned lut;
    int N = q.bits;
    switch (r->how) {
    case TARGET_DQ_PRMT: {
        x = w[a * 8 / 32];
        if (q.kind == DT_INT) x ^= 0x80808080u;
        uint32_t p = prmt(x, 0x64646464u, target_dequant_prmt_sel((int)(a % 4 / 2)));
        return h2op(p, target_dequant_f16x2(q), 0);
    }
    case TARGET_DQ_LOP3:
    case TARGET_DQ_PAIR:
        target_dequant_lop3(q, &mask, &magic, &lut);
        if (r->how == TARGET_DQ_LOP3) x = w[a * N / 32] >> (a * N % 32);
        else x = field(w, a, N) | field(w, a + 1, N) << 16;
        return h2op(lop3(x, mask, magic, lut), target_dequant_f16x2(q), 0);
    case TARGET_DQ_FLOAT: {
        uint32_t c0 = field(w, a, N), c1 = field(w, a + 1, N);
        x = target_dequant_place(q, c0) | target_dequant_place(q, c1) << 16;
        uint32_t s = target_dequant_f16x2(q);
        if (s) x = h2op(x, s, 1);
        if (q.special == DT_SPECIAL_FN) { /* all-ones exponent and mantissa: NaN */
            uint32_t em = (1u << (N - 1)) - 1u;
            if ((c0 & em) == em) x = (x & 0xffff0000u) | 0x7e00u | (c0 >> (N - 1) & 1u) << 15;
            if ((c1 & em) == em) x = (x & 0x0000ffffu) | (0x7e00u | (c1 >> (N - 1) & 1u) << 15) << 16;
        }
        return x;
    }
    default:
        return 0;
    }
}

uint32_t target_dequant_eval(const target_dequant *r, dtype_desc q, const uint32_t *w, int64_t l)
{
    union { float f; uint32_t u; } v;
    int N = q.bits;
    uint32_t c;
    switch (r->how) {
    case TARGET_DQ_MAGIC32:
        c = field(w, l, N);
        if (q.kind == DT_INT) {
            v.u = (uint32_t)((int32_t)(c << (32 - N)) >> (32 - N)) + 0x4B400000u;
            v.f -= 12582912.0f;
        } else {
            v.u = c | 0x4B000000u;
            v.f -= 8388608.0f;
        }
        return v.u;
    case TARGET_DQ_DEC32:
        v.f = dtype_lowfloat_decode(q, field(w, l, N));
        return v.u;
    default: {
        int64_t partner;
        int hi;
        target_dequant_pair(r, q, l, l + 1, &partner, &hi);
        uint32_t x = pair_reg(r, q, w, hi ? partner : l);
        return hi ? x >> 16 : x & 0xffffu;
    }
    }
}
