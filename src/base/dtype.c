/* dtype.c — the dtype table: names, widths, DLPack codes, element
 * conversion to and from double. One row per dtype. */
#include <string.h>

#include "base.h"

/* DLPack before 0.8 (Debian's libdlpack-dev is 0.6) has no kDLBool; its
 * value in later versions is 6, which is what NumPy and PyTorch produce. */
#if DLPACK_VERSION < 80
#define TSL_DL_BOOL 6
#else
#define TSL_DL_BOOL kDLBool
#endif

/*      enum            name        bits float signed dlpack code */
#define DTYPE_ROWS(X)                                         \
    X(TSL_DTYPE_F16,  "float16",  16, 1, 1, kDLFloat)         \
    X(TSL_DTYPE_BF16, "bfloat16", 16, 1, 1, kDLBfloat)        \
    X(TSL_DTYPE_F32,  "float32",  32, 1, 1, kDLFloat)         \
    X(TSL_DTYPE_F64,  "float64",  64, 1, 1, kDLFloat)         \
    X(TSL_DTYPE_I8,   "int8",      8, 0, 1, kDLInt)           \
    X(TSL_DTYPE_I16,  "int16",    16, 0, 1, kDLInt)           \
    X(TSL_DTYPE_I32,  "int32",    32, 0, 1, kDLInt)           \
    X(TSL_DTYPE_I64,  "int64",    64, 0, 1, kDLInt)           \
    X(TSL_DTYPE_U8,   "uint8",     8, 0, 0, kDLUInt)          \
    X(TSL_DTYPE_U16,  "uint16",   16, 0, 0, kDLUInt)          \
    X(TSL_DTYPE_U32,  "uint32",   32, 0, 0, kDLUInt)          \
    X(TSL_DTYPE_U64,  "uint64",   64, 0, 0, kDLUInt)          \
    X(TSL_DTYPE_BOOL, "bool",      8, 0, 0, TSL_DL_BOOL)

static const dtype_info infos[] = {
#define ROW(e, n, b, f, s, c) [e] = {n, b, f, s},
    DTYPE_ROWS(ROW)
#undef ROW
};
static const uint8_t dl_codes[] = {
#define ROW(e, n, b, f, s, c) [e] = c,
    DTYPE_ROWS(ROW)
#undef ROW
};
_Static_assert(TSL_COUNTOF(infos) == TSL_DTYPE_COUNT, "one row per dtype");

const dtype_info *dtype_info_of(tsl_dtype t)
{
    TSL_ASSERT((unsigned)t < TSL_DTYPE_COUNT);
    return &infos[t];
}

const char *tsl_dtype_name(tsl_dtype t)
{
    return (unsigned)t < TSL_DTYPE_COUNT ? infos[t].name : "?";
}

size_t tsl_dtype_size(tsl_dtype t)
{
    return (unsigned)t < TSL_DTYPE_COUNT ? (size_t)infos[t].bits / 8 : 0;
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

uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
    return (uint16_t)half;
}

float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (!mant) {
            x = sign;
        } else {
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

double dtype_load(tsl_dtype t, const void *p)
{
    switch (t) {
    case TSL_DTYPE_F16: { uint16_t v; memcpy(&v, p, 2); return f16_to_f32(v); }
    case TSL_DTYPE_BF16: { uint16_t v; memcpy(&v, p, 2); return bf16_to_f32(v); }
    case TSL_DTYPE_F32: { float v; memcpy(&v, p, 4); return v; }
    case TSL_DTYPE_F64: { double v; memcpy(&v, p, 8); return v; }
    case TSL_DTYPE_I8: return *(const int8_t *)p;
    case TSL_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case TSL_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TSL_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case TSL_DTYPE_U8: return *(const uint8_t *)p;
    case TSL_DTYPE_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case TSL_DTYPE_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case TSL_DTYPE_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    case TSL_DTYPE_BOOL: return *(const uint8_t *)p != 0;
    default: TSL_ASSERT(0 && "bad dtype");
    }
}

/* Integers: truncate toward zero and wrap like a C cast through int64 (NaN
 * and out-of-range values become 0 rather than undefined behaviour). */
static int64_t to_i64(double v)
{
    if (!(v == v) || v >= 9.2233720368547758e18 || v <= -9.2233720368547758e18) return 0;
    return (int64_t)v;
}

static uint64_t to_u64(double v)
{
    if (!(v == v) || v >= 1.8446744073709552e19 || v <= -9.2233720368547758e18) return 0;
    return v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;
}

void dtype_store(tsl_dtype t, void *p, double v)
{
    switch (t) {
    case TSL_DTYPE_F16: { uint16_t h = f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case TSL_DTYPE_BF16: { uint16_t h = f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case TSL_DTYPE_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case TSL_DTYPE_F64: memcpy(p, &v, 8); break;
    case TSL_DTYPE_I8: *(int8_t *)p = (int8_t)to_i64(v); break;
    case TSL_DTYPE_I16: { int16_t x = (int16_t)to_i64(v); memcpy(p, &x, 2); break; }
    case TSL_DTYPE_I32: { int32_t x = (int32_t)to_i64(v); memcpy(p, &x, 4); break; }
    case TSL_DTYPE_I64: { int64_t x = to_i64(v); memcpy(p, &x, 8); break; }
    case TSL_DTYPE_U8: *(uint8_t *)p = (uint8_t)to_u64(v); break;
    case TSL_DTYPE_U16: { uint16_t x = (uint16_t)to_u64(v); memcpy(p, &x, 2); break; }
    case TSL_DTYPE_U32: { uint32_t x = (uint32_t)to_u64(v); memcpy(p, &x, 4); break; }
    case TSL_DTYPE_U64: { uint64_t x = to_u64(v); memcpy(p, &x, 8); break; }
    case TSL_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
    default: TSL_ASSERT(0 && "bad dtype");
    }
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
