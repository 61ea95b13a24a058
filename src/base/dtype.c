/* dtype.c — the dtype table and descriptors: names (TC and tile IR
 * spellings), widths, DLPack codes, and element access to and from double
 * at any bit width (packed low-bit tensors included). One row per dtype;
 * conversions of the floats live in dtype_conv.c. */
#include <math.h>
#include <string.h>

#include "base.h"

/* DLPack before 0.8 (Debian's libdlpack-dev is 0.6) has no kDLBool; its
 * value in later versions is 6, which is what NumPy and PyTorch produce.
 * The 8-, 6- and 4-bit float codes are DLPack 1.1's; the other low-bit
 * floats have none, and tessel describes them as code 0x80 + exponent bits
 * with their width in `bits` (its own extension, never produced by others). */
#if DLPACK_VERSION < 80
#define TSL_DL_BOOL 6
#else
#define TSL_DL_BOOL kDLBool
#endif
#define TSL_DL_F8E4M3FN 10
#define TSL_DL_F8E5M2 12
#define TSL_DL_F6E2M3FN 15
#define TSL_DL_F6E3M2FN 16
#define TSL_DL_F4E2M1FN 17
#define TSL_DL_LOWFLOAT(x) (0x80 + (x))

/* enum, TC name, tile IR name, kind, bits, exponent, mantissa, DLPack code */
#define DTYPE_ROWS(X) \
    X(TSL_DTYPE_F16,  "float16",  "f16",  DT_FLOAT, 16, 5, 10, kDLFloat) \
    X(TSL_DTYPE_BF16, "bfloat16", "bf16", DT_FLOAT, 16, 8, 7,  kDLBfloat) \
    X(TSL_DTYPE_F32,  "float32",  "f32",  DT_FLOAT, 32, 8, 23, kDLFloat) \
    X(TSL_DTYPE_F64,  "float64",  "f64",  DT_FLOAT, 64, 11, 52, kDLFloat) \
    X(TSL_DTYPE_I8, "int8", "i8", DT_INT, 8, 0, 0, kDLInt) \
    X(TSL_DTYPE_I16, "int16", "i16", DT_INT, 16, 0, 0, kDLInt) \
    X(TSL_DTYPE_I32, "int32", "i32", DT_INT, 32, 0, 0, kDLInt) \
    X(TSL_DTYPE_I64, "int64", "i64", DT_INT, 64, 0, 0, kDLInt) \
    X(TSL_DTYPE_U8, "uint8", "u8", DT_UINT, 8, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U16, "uint16", "u16", DT_UINT, 16, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U32, "uint32", "u32", DT_UINT, 32, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U64, "uint64", "u64", DT_UINT, 64, 0, 0, kDLUInt) \
    X(TSL_DTYPE_BOOL, "bool", "bool", DT_BOOL, 8, 0, 0, TSL_DL_BOOL) \
    X(TSL_DTYPE_U1, "uint1", "u1", DT_UINT, 1, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U2, "uint2", "u2", DT_UINT, 2, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U3, "uint3", "u3", DT_UINT, 3, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U4, "uint4", "u4", DT_UINT, 4, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U5, "uint5", "u5", DT_UINT, 5, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U6, "uint6", "u6", DT_UINT, 6, 0, 0, kDLUInt) \
    X(TSL_DTYPE_U7, "uint7", "u7", DT_UINT, 7, 0, 0, kDLUInt) \
    X(TSL_DTYPE_I2, "int2", "i2", DT_INT, 2, 0, 0, kDLInt) \
    X(TSL_DTYPE_I3, "int3", "i3", DT_INT, 3, 0, 0, kDLInt) \
    X(TSL_DTYPE_I4, "int4", "i4", DT_INT, 4, 0, 0, kDLInt) \
    X(TSL_DTYPE_I5, "int5", "i5", DT_INT, 5, 0, 0, kDLInt) \
    X(TSL_DTYPE_I6, "int6", "i6", DT_INT, 6, 0, 0, kDLInt) \
    X(TSL_DTYPE_I7, "int7", "i7", DT_INT, 7, 0, 0, kDLInt) \
    X(TSL_DTYPE_F3E1M1, "float3e1m1", "f3e1m1", DT_FLOAT, 3, 1, 1, TSL_DL_LOWFLOAT(1)) \
    X(TSL_DTYPE_F3E2M0, "float3e2m0", "f3e2m0", DT_FLOAT, 3, 2, 0, TSL_DL_LOWFLOAT(2)) \
    X(TSL_DTYPE_F4E1M2, "float4e1m2", "f4e1m2", DT_FLOAT, 4, 1, 2, TSL_DL_LOWFLOAT(1)) \
    X(TSL_DTYPE_F4E2M1, "float4e2m1", "f4e2m1", DT_FLOAT, 4, 2, 1, TSL_DL_F4E2M1FN) \
    X(TSL_DTYPE_F4E3M0, "float4e3m0", "f4e3m0", DT_FLOAT, 4, 3, 0, TSL_DL_LOWFLOAT(3)) \
    X(TSL_DTYPE_F5E1M3, "float5e1m3", "f5e1m3", DT_FLOAT, 5, 1, 3, TSL_DL_LOWFLOAT(1)) \
    X(TSL_DTYPE_F5E2M2, "float5e2m2", "f5e2m2", DT_FLOAT, 5, 2, 2, TSL_DL_LOWFLOAT(2)) \
    X(TSL_DTYPE_F5E3M1, "float5e3m1", "f5e3m1", DT_FLOAT, 5, 3, 1, TSL_DL_LOWFLOAT(3)) \
    X(TSL_DTYPE_F5E4M0, "float5e4m0", "f5e4m0", DT_FLOAT, 5, 4, 0, TSL_DL_LOWFLOAT(4)) \
    X(TSL_DTYPE_F6E1M4, "float6e1m4", "f6e1m4", DT_FLOAT, 6, 1, 4, TSL_DL_LOWFLOAT(1)) \
    X(TSL_DTYPE_F6E2M3, "float6e2m3", "f6e2m3", DT_FLOAT, 6, 2, 3, TSL_DL_F6E2M3FN) \
    X(TSL_DTYPE_F6E3M2, "float6e3m2", "f6e3m2", DT_FLOAT, 6, 3, 2, TSL_DL_F6E3M2FN) \
    X(TSL_DTYPE_F6E4M1, "float6e4m1", "f6e4m1", DT_FLOAT, 6, 4, 1, TSL_DL_LOWFLOAT(4)) \
    X(TSL_DTYPE_F6E5M0, "float6e5m0", "f6e5m0", DT_FLOAT, 6, 5, 0, TSL_DL_LOWFLOAT(5)) \
    X(TSL_DTYPE_F7E1M5, "float7e1m5", "f7e1m5", DT_FLOAT, 7, 1, 5, TSL_DL_LOWFLOAT(1)) \
    X(TSL_DTYPE_F7E2M4, "float7e2m4", "f7e2m4", DT_FLOAT, 7, 2, 4, TSL_DL_LOWFLOAT(2)) \
    X(TSL_DTYPE_F7E3M3, "float7e3m3", "f7e3m3", DT_FLOAT, 7, 3, 3, TSL_DL_LOWFLOAT(3)) \
    X(TSL_DTYPE_F7E4M2, "float7e4m2", "f7e4m2", DT_FLOAT, 7, 4, 2, TSL_DL_LOWFLOAT(4)) \
    X(TSL_DTYPE_F7E5M1, "float7e5m1", "f7e5m1", DT_FLOAT, 7, 5, 1, TSL_DL_LOWFLOAT(5)) \
    X(TSL_DTYPE_F7E6M0, "float7e6m0", "f7e6m0", DT_FLOAT, 7, 6, 0, TSL_DL_LOWFLOAT(6)) \
    X(TSL_DTYPE_F8E1M6, "float8e1m6", "f8e1m6", DT_FLOAT, 8, 1, 6, TSL_DL_LOWFLOAT(1)) \
    X(TSL_DTYPE_F8E2M5, "float8e2m5", "f8e2m5", DT_FLOAT, 8, 2, 5, TSL_DL_LOWFLOAT(2)) \
    X(TSL_DTYPE_F8E3M4, "float8e3m4", "f8e3m4", DT_FLOAT, 8, 3, 4, TSL_DL_LOWFLOAT(3)) \
    X(TSL_DTYPE_F8E4M3, "float8e4m3", "f8e4m3", DT_FLOAT, 8, 4, 3, TSL_DL_F8E4M3FN) \
    X(TSL_DTYPE_F8E5M2, "float8e5m2", "f8e5m2", DT_FLOAT, 8, 5, 2, TSL_DL_F8E5M2) \
    X(TSL_DTYPE_F8E6M1, "float8e6m1", "f8e6m1", DT_FLOAT, 8, 6, 1, TSL_DL_LOWFLOAT(6)) \
    X(TSL_DTYPE_F8E7M0, "float8e7m0", "f8e7m0", DT_FLOAT, 8, 7, 0, TSL_DL_LOWFLOAT(7))

static dtype_info infos[] = {
#define ROW(e, n, tn, k, b, x, m, c) [e] = {n, tn, b, k == DT_FLOAT, k == DT_INT || k == DT_FLOAT, {k, b, x, m, 0, 0}},
    DTYPE_ROWS(ROW)
#undef ROW
};
static const uint8_t dl_codes[] = {
#define ROW(e, n, tn, k, b, x, m, c) [e] = c,
    DTYPE_ROWS(ROW)
#undef ROW
};
_Static_assert(TSL_COUNTOF(infos) == TSL_DTYPE_COUNT, "one row per dtype");
_Static_assert(TSL_COUNTOF(dl_codes) == TSL_DTYPE_COUNT, "one row per dtype");

dtype_desc dtype_desc_make(dtype_kind kind, int bits, int exp, int man)
{
    dtype_desc d = {(uint8_t)kind, (uint8_t)bits, 0, 0, 0, 0};
    if (kind != DT_FLOAT) return d;
    d.exp = (uint8_t)exp;
    d.man = (uint8_t)man;
    d.bias = (int16_t)((1 << (exp - 1)) - 1);
    if (bits >= 16 || (bits == 8 && exp == 5)) d.special = DT_SPECIAL_IEEE;
    else if (bits == 8 && exp == 4) d.special = DT_SPECIAL_FN;
    else d.special = DT_SPECIAL_FINITE;
    return d;
}

int dtype_desc_eq(dtype_desc a, dtype_desc b)
{
    return a.kind == b.kind && a.bits == b.bits && a.exp == b.exp && a.man == b.man;
}

int dtype_desc_is_lowfloat(dtype_desc d)
{
    return d.kind == DT_FLOAT && d.bits <= 8;
}

/* The descriptors' derived fields, filled once (the rows give only the
 * defining four). Races are benign: every thread writes the same bytes. */
static void infos_init(void)
{
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return;
    for (int i = 0; i < TSL_DTYPE_COUNT; i++) {
        dtype_desc d = infos[i].desc;
        infos[i].desc = dtype_desc_make((dtype_kind)d.kind, d.bits, d.exp, d.man);
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

const dtype_info *dtype_info_of(tsl_dtype t)
{
    TSL_ASSERT((unsigned)t < TSL_DTYPE_COUNT);
    infos_init();
    return &infos[t];
}

int dtype_from_desc(dtype_desc d, tsl_dtype *out)
{
    for (int i = 0; i < TSL_DTYPE_COUNT; i++)
        if (dtype_desc_eq(infos[i].desc, d)) {
            *out = (tsl_dtype)i;
            return 0;
        }
    return -1;
}

const char *tsl_dtype_name(tsl_dtype t)
{
    return (unsigned)t < TSL_DTYPE_COUNT ? infos[t].name : "?";
}

int tsl_dtype_bits(tsl_dtype t)
{
    return (unsigned)t < TSL_DTYPE_COUNT ? infos[t].bits : 0;
}

size_t tsl_dtype_size(tsl_dtype t)
{
    return (unsigned)t < TSL_DTYPE_COUNT && infos[t].bits % 8 == 0 ? (size_t)infos[t].bits / 8 : 0;
}

size_t tsl_dtype_nbytes(tsl_dtype t, int64_t n)
{
    if ((unsigned)t >= TSL_DTYPE_COUNT || n <= 0) return 0;
    return (size_t)(((uint64_t)n * (uint64_t)infos[t].bits + 7) / 8);
}

int tsl_dtype_from_dlpack(DLDataType d, tsl_dtype *out)
{
    if (d.lanes != 1) return -1;
    for (int i = 0; i < TSL_DTYPE_COUNT; i++) {
        if (dl_codes[i] == d.code && infos[i].bits == d.bits) {
            *out = (tsl_dtype)i;
            return 0;
        }
    }
    /* some producers describe bool as uint8 with code kDLBool and 1 bit */
    if (d.code == TSL_DL_BOOL && (d.bits == 1 || d.bits == 8)) {
        *out = TSL_DTYPE_BOOL;
        return 0;
    }
    return -1;
}

DLDataType tsl_dtype_to_dlpack(tsl_dtype t)
{
    DLDataType d = {dl_codes[t], (uint8_t)infos[t].bits, 1};
    return d;
}

int dtype_parse(const char *name, size_t len, tsl_dtype *out)
{
    static const struct { const char *alias; tsl_dtype t; } aliases[] = {
        {"half", TSL_DTYPE_F16}, {"float", TSL_DTYPE_F32}, {"double", TSL_DTYPE_F64},
    };
    for (size_t i = 0; i < TSL_COUNTOF(aliases); i++) {
        if (strlen(aliases[i].alias) == len && !memcmp(aliases[i].alias, name, len)) {
            *out = aliases[i].t;
            return 0;
        }
    }
    for (int i = 0; i < TSL_DTYPE_COUNT; i++) {
        if (strlen(infos[i].name) == len && !memcmp(infos[i].name, name, len)) {
            *out = (tsl_dtype)i;
            return 0;
        }
    }
    return -1;
}

int dtype_parse_short(const char *name, size_t len, tsl_dtype *out)
{
    for (int i = 0; i < TSL_DTYPE_COUNT; i++) {
        if (strlen(infos[i].tname) == len && !memcmp(infos[i].tname, name, len)) {
            *out = (tsl_dtype)i;
            return 0;
        }
    }
    return dtype_parse(name, len, out);
}

tsl_dtype dtype_carrier(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    if (d->is_float && d->bits <= 8) return TSL_DTYPE_F32;
    if (d->bits < 8 && t != TSL_DTYPE_BOOL) return d->is_signed ? TSL_DTYPE_I8 : TSL_DTYPE_U8;
    return t;
}

int64_t dtype_int_wrap(tsl_dtype t, int64_t v)
{
    const dtype_info *d = dtype_info_of(t);
    if (d->desc.kind == DT_BOOL) return v != 0;
    if (d->bits >= 64) return v;
    uint64_t mask = ((uint64_t)1 << d->bits) - 1, u = (uint64_t)v & mask;
    if (d->desc.kind == DT_INT && (u >> (d->bits - 1)) & 1) u |= ~mask;
    return (int64_t)u;
}

int64_t dtype_int_min(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    if (d->desc.kind != DT_INT) return 0;
    return d->bits >= 64 ? INT64_MIN : -((int64_t)1 << (d->bits - 1));
}

int64_t dtype_int_max(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    if (d->desc.kind == DT_BOOL) return 1;
    if (d->desc.kind == DT_INT) return d->bits >= 64 ? INT64_MAX : ((int64_t)1 << (d->bits - 1)) - 1;
    return d->bits >= 64 ? -1 /* the bit pattern of UINT64_MAX */ : (int64_t)(((uint64_t)1 << d->bits) - 1);
}

/* ---- element access ---------------------------------------------------------- */

uint64_t dtype_get_bits(tsl_dtype t, const void *base, int64_t e)
{
    int bits = dtype_info_of(t)->bits;
    const uint8_t *p = base;
    if (bits % 8 == 0) {
        uint64_t u = 0;
        memcpy(&u, p + (ptrdiff_t)e * (bits / 8), (size_t)(bits / 8)); /* little-endian host */
        return u;
    }
    uint64_t at = (uint64_t)e * (uint64_t)bits;
    unsigned w = p[at / 8], s = (unsigned)(at % 8);
    if (s + (unsigned)bits > 8) w |= (unsigned)p[at / 8 + 1] << 8;
    return (w >> s) & ((1u << bits) - 1);
}

void dtype_set_bits(tsl_dtype t, void *base, int64_t e, uint64_t u)
{
    int bits = dtype_info_of(t)->bits;
    uint8_t *p = base;
    if (bits % 8 == 0) {
        memcpy(p + (ptrdiff_t)e * (bits / 8), &u, (size_t)(bits / 8));
        return;
    }
    uint64_t at = (uint64_t)e * (uint64_t)bits;
    unsigned s = (unsigned)(at % 8), mask = ((1u << bits) - 1) << s, v = ((unsigned)u << s) & mask;
    p[at / 8] = (uint8_t)((p[at / 8] & ~mask) | v);
    if (s + (unsigned)bits > 8)
        p[at / 8 + 1] = (uint8_t)((p[at / 8 + 1] & ~(mask >> 8)) | (v >> 8));
}

/* A double as a `bits`-bit integer (docs/language.md, "Arithmetic and
 * conversions"): truncated toward zero, saturated to the type's range,
 * NaN 0. The one definition every store, cast and generator follows. */
static int64_t to_int_sat(double v, int bits, int sgn)
{
    if (!(v == v)) return 0;
    double lim = ldexp(1.0, sgn ? bits - 1 : bits); /* the first value out of range */
    if (v >= lim) return sgn ? (int64_t)(~(uint64_t)0 >> (65 - bits)) : (int64_t)(~(uint64_t)0 >> (64 - bits));
    if (sgn ? v <= -lim : v <= -1.0) return sgn ? (int64_t)((uint64_t)-1 << (bits - 1)) : 0;
    return sgn ? (int64_t)v : (int64_t)(uint64_t)v;
}

/* The value a code of dtype t stands for. */
static double bits_value(tsl_dtype t, uint64_t u)
{
    const dtype_info *d = dtype_info_of(t);
    switch (d->desc.kind) {
    case DT_FLOAT:
        switch (d->bits) {
        case 16: return d->desc.exp == 5 ? f16_to_f32((uint16_t)u) : bf16_to_f32((uint16_t)u);
        case 32: { float f; uint32_t x = (uint32_t)u; memcpy(&f, &x, 4); return f; }
        case 64: { double f; memcpy(&f, &u, 8); return f; }
        default: return dtype_lowfloat_decode(d->desc, (uint32_t)u);
        }
    case DT_BOOL: return u != 0;
    case DT_INT:
        if (d->bits < 64 && (u >> (d->bits - 1)) & 1) u |= ~(((uint64_t)1 << d->bits) - 1);
        return (double)(int64_t)u;
    default: return (double)u;
    }
}

/* The code of dtype t holding v (floats rounded, integers wrapped). */
static uint64_t value_bits(tsl_dtype t, double v)
{
    const dtype_info *d = dtype_info_of(t);
    uint64_t mask = d->bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << d->bits) - 1;
    switch (d->desc.kind) {
    case DT_FLOAT:
        switch (d->bits) {
        case 16: return d->desc.exp == 5 ? f32_to_f16((float)v) : f32_to_bf16((float)v);
        case 32: { float f = (float)v; uint32_t x; memcpy(&x, &f, 4); return x; }
        case 64: { uint64_t x; memcpy(&x, &v, 8); return x; }
        default: return dtype_lowfloat_encode(d->desc, (float)v);
        }
    case DT_BOOL: return v != 0;
    case DT_INT: return (uint64_t)to_int_sat(v, d->bits, 1) & mask;
    default: return (uint64_t)to_int_sat(v, d->bits, 0) & mask;
    }
}

double dtype_get(tsl_dtype t, const void *base, int64_t e)
{
    return bits_value(t, dtype_get_bits(t, base, e));
}

void dtype_set(tsl_dtype t, void *base, int64_t e, double v)
{
    dtype_set_bits(t, base, e, value_bits(t, v));
}

double dtype_load(tsl_dtype t, const void *p)
{
    return dtype_get(t, p, 0);
}

void dtype_store(tsl_dtype t, void *p, double v)
{
    dtype_set(t, p, 0, v);
}

double dtype_round(tsl_dtype t, double v)
{
    const dtype_info *d = dtype_info_of(t);
    if (d->desc.kind != DT_FLOAT || d->bits == 64) return v;
    if (d->bits == 32) return (float)v;
    return bits_value(t, value_bits(t, v));
}

double dtype_max_num(double x, double y)
{
    if (y != y) return x;
    if (x != x) return y;
    if (x == y) return signbit(x) ? y : x; /* max(-0, +0) = +0 */
    return x > y ? x : y;
}

double dtype_min_num(double x, double y)
{
    if (y != y) return x;
    if (x != x) return y;
    if (x == y) return signbit(x) ? x : y; /* min(-0, +0) = -0 */
    return x < y ? x : y;
}

/* ---- pack / unpack ------------------------------------------------------------ */

tsl_status tsl_pack(tsl_dtype t, const double *values, int64_t n, void *out, int64_t *first_bad)
{
    if ((unsigned)t >= TSL_DTYPE_COUNT || n < 0 || (n && (!values || !out))) return TSL_ERR_ARG;
    const dtype_info *d = dtype_info_of(t);
    size_t nb = tsl_dtype_nbytes(t, n);
    if (nb) ((uint8_t *)out)[nb - 1] = 0; /* bits past the last element */
    for (int64_t i = 0; i < n; i++) {
        double v = values[i];
        if (d->desc.kind == DT_INT || d->desc.kind == DT_UINT) {
            int ok = v == v && v == (double)(int64_t)v;
            if (ok && d->bits < 64) ok = v >= (double)dtype_int_min(t) && v <= (double)dtype_int_max(t);
            if (!ok) {
                if (first_bad) *first_bad = i;
                return TSL_ERR_ARG;
            }
        }
        dtype_set(t, out, i, v);
    }
    return TSL_OK;
}

tsl_status tsl_unpack(tsl_dtype t, const void *packed, int64_t n, double *out)
{
    if ((unsigned)t >= TSL_DTYPE_COUNT || n < 0 || (n && (!packed || !out))) return TSL_ERR_ARG;
    for (int64_t i = 0; i < n; i++) out[i] = dtype_get(t, packed, i);
    return TSL_OK;
}

const char *tsl_status_name(tsl_status s)
{
    static const char *names[] = {
        "TSL_OK", "TSL_ERR_SYNTAX", "TSL_ERR_SEMANTIC", "TSL_ERR_RANGE", "TSL_ERR_SHAPE",
        "TSL_ERR_BOUNDS", "TSL_ERR_ARG", "TSL_ERR_IO", "TSL_ERR_UNAVAILABLE",
        "TSL_ERR_COMPILE", "TSL_ERR_RUNTIME", "TSL_ERR_NOMEM", "TSL_ERR_INTERNAL",
    };
    return (unsigned)s < TSL_COUNTOF(names) ? names[s] : "TSL_ERR_?";
}
