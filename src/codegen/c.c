/* c.c — tile IR -> C11 for the CPU, and running the result.
 *
 * Requires a verified kernel (pipelines are expanded here first, on a
 * copy). Guarantees: the generated code computes what the tile
 * interpreter (src/tile/interp.c) computes, instruction by instruction:
 *   - one C function `blk` runs one thread block; the extern entry runs a
 *     range [begin, end) of the flattened grid (x fastest) with one
 *     workspace (shared memory + registers + scratch) per range;
 *   - a register tensor with a distributed layout of T threads x L locals
 *     is an array [T*L] indexed thread * L + local; the (thread, local) ->
 *     coordinate maps are computed here with src/layout and emitted as
 *     static tables, so a wrong layout gives the interpreter's wrong answer;
 *   - register element types: f16/bf16/f32 as float (f16/bf16 values
 *     rounded to nearest even), f64 double, ints as their C type, bool
 *     uint8_t; arithmetic follows the interpreter's formulas (f32 math,
 *     then rounding to the dtype);
 *   - shared memory is one byte range per block, tensors at the
 *     interpreter's offsets through their (swizzled) data layouts, every
 *     access checked against the tensor's shape (a run-time error names the
 *     instruction); global accesses are masked to the tensor's bounds;
 *   - copy_async is a plain copy; commit / wait / sync are no-ops (all
 *     threads of a block run in program order; hazards are the
 *     interpreter's job);
 *   - decompositions run their body once per thread (thread_idx, indices)
 *     recording the atoms' operands, then run the atoms warp by warp, as
 *     the interpreter does; ldmatrix.x4 is the atom it knows.
 * Indexing is int64_t throughout (docs/codegen.md: why not 32-bit). */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "codegen/codegen.h"
#include "runtime/runtime.h"
#include "tile/pipeline.h"

#define CGC_MAX_RANK 8
#define CGC_DEFAULT_SMEM (228 * 1024)

/* ---- generator state ----------------------------------------------------- */

/* The (thread, local) -> coordinate table of one register type (layout
 * text + dims), emitted once as static arrays when used. */
typedef struct cgc_tab {
    const dist_layout *lay;
    const char *text;
    int rank;
    int64_t dims[CGC_MAX_RANK];
    int64_t nthreads, nlocals, ns;
    int32_t *coord;  /* [ns * rank]; -1 in every dim when outside the dims */
    uint8_t *own;    /* 1: inside the dims and the lowest owner of its coordinate */
    int used_coord, used_own;
} cgc_tab;

/* A run-time error a block can return (1-based index in the list). */
typedef struct cgc_err {
    tsl_status st;
    char *msg;   /* with info: a format taking info[0], info[1] (long long) */
    char *where; /* " (in `statement`)" or "" */
    int info;
} cgc_err;

typedef struct cgc {
    const tile_kernel *k;
    tsl_arena *ar;
    tsl_diag *d;
    tsl_status st;   /* first generation error */
    strbuf tabs;     /* static tables */
    strbuf body;     /* the block function's statements */
    int ind;
    cgc_tab *tabv;
    int ntab, captab;
    int64_t *soff;   /* per value id: byte offset of a shared tensor, -1 none */
    int64_t *roff;   /* per value id: byte offset of a register tensor in the register area */
    int *rtab;       /* per value id: its table, -1 none */
    int64_t smem, regs, scratch;
    cgc_err *errs;
    int nerrs, caperrs;
    int tmp;         /* unique temporaries */
    int divs;        /* an emitted expression may divide by zero */
    const char *text; /* the current statement's text (comments, messages) */
    char **lines;    /* the printed kernel, one statement header per line */
    int nlines, caplines, line_at;
    int in_decomp;
} cgc;

static void cg_fail(cgc *c, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
static void cg_fail(cgc *c, tsl_status st, const char *fmt, ...)
{
    if (c->st) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->st = st;
    diag_error(c->d, st, "codegen/c: kernel '%s': %s%s%s%s", c->k->name, msg,
               c->text ? " (in `" : "", c->text ? c->text : "", c->text ? "`)" : "");
}

/* Register a run-time error; gives the code the block returns. */
static int cg_err(cgc *c, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
static int cg_err(cgc *c, tsl_status st, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cgc_err e = {st, arena_strdup(c->ar, msg),
                 arena_printf(c->ar, "%s%s%s", c->text ? " (in `" : "", c->text ? c->text : "", c->text ? "`)" : ""),
                 0};
    ARENA_PUSH(c->ar, c->errs, c->nerrs, c->caperrs, e);
    return c->nerrs;
}

static void L(cgc *c, const char *fmt, ...) TSL_PRINTF(2, 3);
static void L(cgc *c, const char *fmt, ...)
{
    for (int i = 0; i < c->ind; i++) sb_puts(&c->body, "    ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&c->body, fmt, ap);
    va_end(ap);
    sb_putc(&c->body, '\n');
}

static int64_t align_up(int64_t x, int64_t a)
{
    return (x + a - 1) / a * a;
}

/* ---- dtypes ------------------------------------------------------------------ */

static int dt_is(tile_dtype t, int kind, int bits)
{
    return t.kind == kind && t.bits == bits;
}

static int dt_f16(tile_dtype t)
{
    return dt_is(t, TILE_DT_FLOAT, 16) && t.exp == 5;
}

static int dt_bf16(tile_dtype t)
{
    return dt_is(t, TILE_DT_FLOAT, 16) && t.exp == 8;
}

/* Is dt one the generator holds (the 13 byte-sized tessel dtypes)? */
static int dt_ok(tile_dtype t)
{
    tsl_dtype x;
    return tile_dtype_to_tsl(t, &x) == 0;
}

/* C type of an element in memory (global, shared). */
static const char *mem_ctype(tile_dtype t)
{
    switch (t.kind) {
    case TILE_DT_FLOAT: return t.bits == 16 ? "uint16_t" : t.bits == 32 ? "float" : "double";
    case TILE_DT_BOOL: return "uint8_t";
    case TILE_DT_INT:
        return t.bits == 8 ? "int8_t" : t.bits == 16 ? "int16_t" : t.bits == 32 ? "int32_t" : "int64_t";
    default:
        return t.bits == 8 ? "uint8_t" : t.bits == 16 ? "uint16_t" : t.bits == 32 ? "uint32_t" : "uint64_t";
    }
}

/* C type of a register element. */
static const char *reg_ctype(tile_dtype t)
{
    if (t.kind == TILE_DT_FLOAT) return t.bits == 64 ? "double" : "float";
    return mem_ctype(t);
}

static int64_t reg_size(tile_dtype t)
{
    if (t.kind == TILE_DT_FLOAT) return t.bits == 64 ? 8 : 4;
    return t.bits / 8 ? t.bits / 8 : 1;
}

/* A double expression `v` rounded to register dtype t (interp round_to). */
static char *rnd(cgc *c, tile_dtype t, const char *v)
{
    if (dt_f16(t)) return arena_printf(c->ar, "tsl_rf16(%s)", v);
    if (dt_bf16(t)) return arena_printf(c->ar, "tsl_rbf16(%s)", v);
    if (t.kind == TILE_DT_FLOAT) return arena_printf(c->ar, "(%s)(%s)", reg_ctype(t), v);
    if (t.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(uint8_t)((%s) != 0)", v);
    return arena_printf(c->ar, "(%s)tsl_rint(%s, %d, %d)", reg_ctype(t), v, t.bits,
                        t.kind == TILE_DT_INT);
}

/* A memory element `x` of dtype t as a double (dtype_load). */
static char *mem_to_dbl(cgc *c, tile_dtype t, const char *x)
{
    if (dt_f16(t)) return arena_printf(c->ar, "(double)tsl_h2f(%s)", x);
    if (dt_bf16(t)) return arena_printf(c->ar, "(double)tsl_bf2f(%s)", x);
    if (t.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(double)((%s) != 0)", x);
    return arena_printf(c->ar, "(double)(%s)", x);
}

/* A double `v` as a memory element of dtype t (dtype_store). */
static char *dbl_to_mem(cgc *c, tile_dtype t, const char *v)
{
    if (dt_f16(t)) return arena_printf(c->ar, "tsl_f2h((float)(%s))", v);
    if (dt_bf16(t)) return arena_printf(c->ar, "tsl_f2bf((float)(%s))", v);
    if (t.kind == TILE_DT_FLOAT) return arena_printf(c->ar, "(%s)(%s)", mem_ctype(t), v);
    if (t.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(uint8_t)((%s) != 0)", v);
    if (t.kind == TILE_DT_INT) return arena_printf(c->ar, "(%s)tsl_sti(%s)", mem_ctype(t), v);
    return arena_printf(c->ar, "(%s)tsl_stu(%s)", mem_ctype(t), v);
}

/* Memory element x (dtype m) -> register value of dtype r. */
static char *load_conv(cgc *c, tile_dtype m, tile_dtype r, const char *x)
{
    if (tile_dtype_eq(m, r)) {
        if (dt_f16(m)) return arena_printf(c->ar, "tsl_h2f(%s)", x);
        if (dt_bf16(m)) return arena_printf(c->ar, "tsl_bf2f(%s)", x);
        if (m.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(uint8_t)((%s) != 0)", x);
        return arena_strdup(c->ar, x);
    }
    return rnd(c, r, mem_to_dbl(c, m, x));
}

/* Register value x (dtype r) -> memory element of dtype m. */
static char *store_conv(cgc *c, tile_dtype r, tile_dtype m, const char *x)
{
    if (tile_dtype_eq(m, r)) {
        if (dt_f16(m)) return arena_printf(c->ar, "tsl_f2h(%s)", x);
        if (dt_bf16(m)) return arena_printf(c->ar, "tsl_f2bf(%s)", x);
        return arena_strdup(c->ar, x);
    }
    return dbl_to_mem(c, m, arena_printf(c->ar, "(double)(%s)", x));
}

/* The value a register slot outside the tensor holds (the interpreter's
 * NaN; integer registers cannot hold it and get 0). */
static const char *pad_value(tile_dtype t)
{
    return t.kind == TILE_DT_FLOAT ? "NAN" : "0";
}

/* ---- the prelude every kernel starts with ------------------------------------- */

static const char cgc_prelude[] =
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#ifdef __clang__\n"
    "#pragma STDC FP_CONTRACT OFF\n"
    "#endif\n"
    "\n"
    "/* f32 -> f16 bits, round to nearest even (overflow to inf, NaN kept quiet) */\n"
    "static inline uint16_t tsl_f2h(float f)\n"
    "{\n"
    "    uint32_t x;\n"
    "    memcpy(&x, &f, 4);\n"
    "    uint32_t s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;\n"
    "    if (a >= 0x7f800000u) return (uint16_t)(s | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));\n"
    "    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);\n"
    "    if (a < 0x38800000u) {\n"
    "        int e = (int)(a >> 23);\n"
    "        if (e < 102) return (uint16_t)s;\n"
    "        uint32_t m = (a & 0x7fffffu) | 0x800000u;\n"
    "        int sh = 126 - e;\n"
    "        uint32_t h = m >> sh, r = m & ((1u << sh) - 1u), mid = 1u << (sh - 1);\n"
    "        if (r > mid || (r == mid && (h & 1u))) h++;\n"
    "        return (uint16_t)(s | h);\n"
    "    }\n"
    "    uint32_t h = (a - 0x38000000u) >> 13, r = a & 0x1fffu;\n"
    "    if (r > 0x1000u || (r == 0x1000u && (h & 1u))) h++;\n"
    "    return (uint16_t)(s | h);\n"
    "}\n"
    "static inline float tsl_h2f(uint16_t h)\n"
    "{\n"
    "    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;\n"
    "    if (e == 31) x = s | 0x7f800000u | (m << 13);\n"
    "    else if (e) x = s | ((e + 112u) << 23) | (m << 13);\n"
    "    else if (!m) x = s;\n"
    "    else {\n"
    "        float f = (float)m * 5.9604644775390625e-8f; /* m * 2^-24 */\n"
    "        return s ? -f : f;\n"
    "    }\n"
    "    float f;\n"
    "    memcpy(&f, &x, 4);\n"
    "    return f;\n"
    "}\n"
    "static inline uint16_t tsl_f2bf(float f)\n"
    "{\n"
    "    uint32_t x;\n"
    "    memcpy(&x, &f, 4);\n"
    "    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);\n"
    "    x += 0x7fffu + ((x >> 16) & 1u);\n"
    "    return (uint16_t)(x >> 16);\n"
    "}\n"
    "static inline float tsl_bf2f(uint16_t h)\n"
    "{\n"
    "    uint32_t x = (uint32_t)h << 16;\n"
    "    float f;\n"
    "    memcpy(&f, &x, 4);\n"
    "    return f;\n"
    "}\n"
    "static inline float tsl_rf16(double v) { return tsl_h2f(tsl_f2h((float)v)); }\n"
    "static inline float tsl_rbf16(double v) { return tsl_bf2f(tsl_f2bf((float)v)); }\n"
    "/* a value rounded into an integer register: truncate, wrap to `bits` */\n"
    "static inline int64_t tsl_rint(double v, int bits, int sgn)\n"
    "{\n"
    "    if (v != v) return 0;\n"
    "    double t = trunc(v);\n"
    "    if (t > 9.2e18 || t < -9.2e18) return 0;\n"
    "    if (bits >= 64) return (int64_t)t;\n"
    "    uint64_t mask = (1ull << bits) - 1, u = (uint64_t)(int64_t)t & mask;\n"
    "    if (sgn && ((u >> (bits - 1)) & 1u)) return (int64_t)(u | ~mask);\n"
    "    return (int64_t)u;\n"
    "}\n"
    "/* a double stored into integer memory (NaN and out of range give 0) */\n"
    "static inline int64_t tsl_sti(double v)\n"
    "{\n"
    "    if (!(v == v) || v >= 9.2233720368547758e18 || v <= -9.2233720368547758e18) return 0;\n"
    "    return (int64_t)v;\n"
    "}\n"
    "static inline uint64_t tsl_stu(double v)\n"
    "{\n"
    "    if (!(v == v) || v >= 1.8446744073709552e19 || v <= -9.2233720368547758e18) return 0;\n"
    "    return v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;\n"
    "}\n"
    "/* floor division / modulo / ceil division; *err on division by zero */\n"
    "static inline int64_t tsl_fdiv(int64_t a, int64_t b, int *err)\n"
    "{\n"
    "    if (b == 0 || (a == INT64_MIN && b == -1)) {\n"
    "        *err = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    int64_t q = a / b;\n"
    "    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;\n"
    "    return q;\n"
    "}\n"
    "static inline int64_t tsl_fmod(int64_t a, int64_t b, int *err)\n"
    "{\n"
    "    int64_t q = tsl_fdiv(a, b, err);\n"
    "    return (int64_t)((uint64_t)a - (uint64_t)q * (uint64_t)b);\n"
    "}\n"
    "static inline int64_t tsl_cdiv(int64_t a, int64_t b, int *err)\n"
    "{\n"
    "    if (b == 0 || (a == INT64_MIN && b == -1)) {\n"
    "        *err = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return (int64_t)(0 - (uint64_t)tsl_fdiv((int64_t)(0 - (uint64_t)a), b, err));\n"
    "}\n"
    "static inline int64_t tsl_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int64_t tsl_max(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "/* Swizzle<B,M,S> on an element offset */\n"
    "static inline int64_t tsl_swz(int64_t x, int b, int m, int s)\n"
    "{\n"
    "    int64_t mask = ((int64_t)1 << b) - 1;\n"
    "    if (s >= 0) return x ^ ((x & (mask << (m + s))) >> s);\n"
    "    return x ^ ((x & (mask << m)) << -s);\n"
    "}\n"
    "/* one mma.m16n8k16 atom of warp w: fc[lane][i] += A . B over the\n"
    " * fragments (A tile `at` of a, B tile `bt` of b), f32, k in order */\n"
    "static inline void tsl_mma16816(const float *a, int64_t al, int64_t at, const float *b,\n"
    "                                int64_t bl, int64_t bt, int64_t w, float fc[32][4])\n"
    "{\n"
    "    float A[16][16], B[16][8];\n"
    "    for (int l = 0; l < 32; l++) {\n"
    "        int g = l / 4, q = l % 4;\n"
    "        for (int i = 0; i < 8; i++)\n"
    "            A[g + 8 * ((i / 2) % 2)][2 * q + i % 2 + 8 * (i / 4)] = a[(w * 32 + l) * al + at * 8 + i];\n"
    "        for (int i = 0; i < 4; i++)\n"
    "            B[2 * q + i % 2 + 8 * (i / 2)][g] = b[(w * 32 + l) * bl + bt * 4 + i];\n"
    "    }\n"
    "    for (int l = 0; l < 32; l++)\n"
    "        for (int i = 0; i < 4; i++) {\n"
    "            int m = l / 4 + 8 * (i / 2), n = 2 * (l % 4) + i % 2;\n"
    "            float acc = fc[l][i];\n"
    "            for (int kk = 0; kk < 16; kk++) acc += A[m][kk] * B[kk][n];\n"
    "            fc[l][i] = acc;\n"
    "        }\n"
    "}\n";

/* ---- register tables ------------------------------------------------------------ */

static int tab_of(cgc *c, const tile_type *ty, const char *name)
{
    if (!ty->layout || ty->layout->v.kind != LAYOUT_VALUE_DIST) {
        cg_fail(c, TSL_ERR_SEMANTIC, "register tensor '%s' needs a distributed layout", name);
        return -1;
    }
    if (ty->rank < 1 || ty->rank > CGC_MAX_RANK) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "register tensor '%s' has rank %d (1..%d here)", name,
                ty->rank, CGC_MAX_RANK);
        return -1;
    }
    int64_t dims[CGC_MAX_RANK];
    for (int i = 0; i < ty->rank; i++)
        if (!tile_expr_const(ty->dims[i], &dims[i]) || dims[i] < 1) {
            cg_fail(c, TSL_ERR_SHAPE, "register tensor '%s': dim %d is not a positive constant", name, i);
            return -1;
        }
    for (int t = 0; t < c->ntab; t++)
        if (c->tabv[t].rank == ty->rank && !strcmp(c->tabv[t].text, ty->layout->text) &&
            !memcmp(c->tabv[t].dims, dims, sizeof(int64_t) * (size_t)ty->rank))
            return t;
    const dist_layout *dl = &ty->layout->v.dist;
    if (dl->threads > c->k->threads) {
        cg_fail(c, TSL_ERR_SHAPE, "register tensor '%s': its layout spans %lld threads, the block has %d",
                name, (long long)dl->threads, c->k->threads);
        return -1;
    }
    cgc_tab t = {0};
    t.lay = dl;
    t.text = ty->layout->text;
    t.rank = ty->rank;
    memcpy(t.dims, dims, sizeof dims);
    t.nthreads = dl->threads;
    t.nlocals = dl->locals;
    t.ns = dl->threads * dl->locals;
    if (t.ns > (1 << 22)) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "register tensor '%s' has %lld slots per block", name, (long long)t.ns);
        return -1;
    }
    t.coord = arena_alloc(c->ar, sizeof(int32_t) * (size_t)(t.ns * t.rank + 1));
    t.own = arena_alloc(c->ar, (size_t)t.ns + 1);
    int lr = dl->rank;
    for (int64_t s = 0; s < t.ns; s++) {
        int64_t full[DIST_MAX_RANK], ot, ol;
        int ok = dist_layout_map(dl, s / t.nlocals, s % t.nlocals, full) == 0;
        /* layout rank may exceed the tensor's by leading 1s (interp reg_coord) */
        for (int i = 0; ok && i < lr - t.rank; i++) ok = full[i] == 0;
        for (int i = 0; ok && i < t.rank; i++) {
            int64_t x = lr - t.rank + i >= 0 ? full[lr - t.rank + i] : 0;
            ok = x >= 0 && x < dims[i];
        }
        for (int i = 0; i < t.rank; i++)
            t.coord[s * t.rank + i] = ok ? (int32_t)full[lr - t.rank + i] : -1;
        t.own[s] = ok && !dist_layout_owner(dl, full, &ot, &ol) && ot == s / t.nlocals &&
                   ol == s % t.nlocals;
    }
    ARENA_PUSH(c->ar, c->tabv, c->ntab, c->captab, t);
    return c->ntab - 1;
}

static const char *tab_coord(cgc *c, int t)
{
    c->tabv[t].used_coord = 1;
    return arena_printf(c->ar, "TC%d", t);
}

static const char *tab_own(cgc *c, int t)
{
    c->tabv[t].used_own = 1;
    return arena_printf(c->ar, "TO%d", t);
}

static void emit_tables(cgc *c)
{
    for (int t = 0; t < c->ntab; t++) {
        const cgc_tab *tb = &c->tabv[t];
        if (tb->used_coord) {
            sb_printf(&c->tabs, "/* %s over [", tb->text);
            for (int i = 0; i < tb->rank; i++) sb_printf(&c->tabs, "%s%lld", i ? "," : "", (long long)tb->dims[i]);
            sb_printf(&c->tabs, "]: (thread * %lld + local) -> coordinate, -1 outside */\n",
                      (long long)tb->nlocals);
            sb_printf(&c->tabs, "static const int32_t TC%d[%lld][%d] = {", t, (long long)tb->ns, tb->rank);
            for (int64_t s = 0; s < tb->ns; s++) {
                sb_puts(&c->tabs, s % 8 ? " {" : "\n    {");
                for (int i = 0; i < tb->rank; i++)
                    sb_printf(&c->tabs, "%s%d", i ? "," : "", tb->coord[s * tb->rank + i]);
                sb_puts(&c->tabs, "},");
            }
            sb_puts(&c->tabs, "\n};\n");
        }
        if (tb->used_own) {
            sb_printf(&c->tabs, "/* %s: the slot is the lowest owner of its coordinate */\n", tb->text);
            sb_printf(&c->tabs, "static const uint8_t TO%d[%lld] = {", t, (long long)tb->ns);
            for (int64_t s = 0; s < tb->ns; s++)
                sb_printf(&c->tabs, "%s%d,", s % 32 ? "" : "\n    ", tb->own[s]);
            sb_puts(&c->tabs, "\n};\n");
        }
    }
}

/* A static int32 table of n entries; gives its name. */
static const char *emit_i32_table(cgc *c, const char *what, const int64_t *v, int64_t n)
{
    const char *name = arena_printf(c->ar, "TX%d", c->tmp++);
    sb_printf(&c->tabs, "/* %s */\nstatic const int32_t %s[%lld] = {", what, name, (long long)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) sb_printf(&c->tabs, "%s%lld,", i % 16 ? " " : "\n    ", (long long)v[i]);
    if (!n) sb_puts(&c->tabs, "0");
    sb_puts(&c->tabs, "\n};\n");
    return name;
}

/* ---- int expressions ---------------------------------------------------------------- */

static char *cx(cgc *c, const tile_expr *e);

static char *cx_bin(cgc *c, const tile_expr *e)
{
    char *a = cx(c, e->a), *b = cx(c, e->b);
    switch (e->op) {
    /* both sides are evaluated, as the interpreter does */
    case TILE_OP_OR: return arena_printf(c->ar, "((int64_t)(((%s) != 0) | ((%s) != 0)))", a, b);
    case TILE_OP_AND: return arena_printf(c->ar, "((int64_t)(((%s) != 0) & ((%s) != 0)))", a, b);
    case TILE_OP_EQ: return arena_printf(c->ar, "((int64_t)((%s) == (%s)))", a, b);
    case TILE_OP_NE: return arena_printf(c->ar, "((int64_t)((%s) != (%s)))", a, b);
    case TILE_OP_LT: return arena_printf(c->ar, "((int64_t)((%s) < (%s)))", a, b);
    case TILE_OP_LE: return arena_printf(c->ar, "((int64_t)((%s) <= (%s)))", a, b);
    case TILE_OP_GT: return arena_printf(c->ar, "((int64_t)((%s) > (%s)))", a, b);
    case TILE_OP_GE: return arena_printf(c->ar, "((int64_t)((%s) >= (%s)))", a, b);
    case TILE_OP_ADD: return arena_printf(c->ar, "((int64_t)((uint64_t)(%s) + (uint64_t)(%s)))", a, b);
    case TILE_OP_SUB: return arena_printf(c->ar, "((int64_t)((uint64_t)(%s) - (uint64_t)(%s)))", a, b);
    case TILE_OP_MUL: return arena_printf(c->ar, "((int64_t)((uint64_t)(%s) * (uint64_t)(%s)))", a, b);
    case TILE_OP_MIN: return arena_printf(c->ar, "tsl_min(%s, %s)", a, b);
    case TILE_OP_MAX: return arena_printf(c->ar, "tsl_max(%s, %s)", a, b);
    case TILE_OP_DIV: c->divs = 1; return arena_printf(c->ar, "tsl_fdiv(%s, %s, &err)", a, b);
    case TILE_OP_MOD: c->divs = 1; return arena_printf(c->ar, "tsl_fmod(%s, %s, &err)", a, b);
    case TILE_OP_CDIV: c->divs = 1; return arena_printf(c->ar, "tsl_cdiv(%s, %s, &err)", a, b);
    case TILE_OP_COUNT: break;
    }
    cg_fail(c, TSL_ERR_INTERNAL, "unknown operator");
    return "0";
}

/* An int expression as C (int64_t), with the interpreter's meaning. */
static char *cx(cgc *c, const tile_expr *e)
{
    if (!e) {
        cg_fail(c, TSL_ERR_INTERNAL, "missing expression");
        return "0";
    }
    switch (e->kind) {
    case TILE_E_INT:
        if (e->i == INT64_MIN) return "INT64_MIN";
        return arena_printf(c->ar, "((int64_t)%lld)", (long long)e->i);
    case TILE_E_FLOAT: {
        double f = e->f;
        int64_t v = (f == f && f < 9.2e18 && f > -9.2e18) ? (int64_t)f : 0;
        return arena_printf(c->ar, "((int64_t)%lld)", (long long)v);
    }
    case TILE_E_VALUE:
        if (!e->v || e->v->kind != TILE_V_SCALAR) {
            cg_fail(c, TSL_ERR_SEMANTIC, "'%s' is not an int scalar", e->v ? e->v->name : "?");
            return "0";
        }
        return arena_printf(c->ar, "v%d", e->v->id);
    case TILE_E_BLOCK_IDX: return e->dim == 0 ? "bx" : e->dim == 1 ? "by" : "bz";
    case TILE_E_THREAD_IDX:
        if (!c->in_decomp) {
            cg_fail(c, TSL_ERR_SEMANTIC, "thread_idx outside a decomposition");
            return "0";
        }
        return "tid";
    case TILE_E_NEG: return arena_printf(c->ar, "((int64_t)(0 - (uint64_t)(%s)))", cx(c, e->a));
    case TILE_E_NOT: return arena_printf(c->ar, "((int64_t)!(%s))", cx(c, e->a));
    case TILE_E_BIN: return cx_bin(c, e);
    }
    return "0";
}

static char *dbl_lit(cgc *c, double f)
{
    if (f != f) return "NAN";
    if (isinf(f)) return f > 0 ? "INFINITY" : "(-INFINITY)";
    return arena_printf(c->ar, "%.17g", f);
}

/* A scalar operand or fill value as a double (interp eval_num). */
static char *cnum(cgc *c, const tile_expr *e)
{
    if (e && e->kind == TILE_E_FLOAT) return dbl_lit(c, e->f);
    if (e && e->kind == TILE_E_NEG && e->a && e->a->kind == TILE_E_FLOAT) return dbl_lit(c, -e->a->f);
    return arena_printf(c->ar, "(double)%s", cx(c, e));
}

/* After a statement whose expressions may divide by zero. */
static void div_check(cgc *c)
{
    if (!c->divs) return;
    c->divs = 0;
    int id = cg_err(c, TSL_ERR_RUNTIME, "division by zero");
    L(c, "if (err) return %d;", id);
}

/* A temporary holding an int expression (evaluated once, here). */
static char *tmp_int(cgc *c, const tile_expr *e)
{
    int64_t v;
    if (tile_expr_const(e, &v)) return arena_printf(c->ar, "((int64_t)%lld)", (long long)v);
    char *name = arena_printf(c->ar, "t%d", c->tmp++);
    L(c, "const int64_t %s = %s;", name, cx(c, e));
    return name;
}

/* ---- layouts as C ------------------------------------------------------------------- */

/* Offset of 1-D index x inside the subtree at `root` (layout.c eval_sub):
 * leaves colexicographic, the last takes the whole quotient. */
static char *lay_sub(cgc *c, const layout *l, int root, const char *x)
{
    int end = root + l->node[root].nnodes, last = -1;
    for (int i = root; i < end; i++)
        if (!l->node[i].nkids) last = i;
    strbuf sb = {0};
    int64_t div = 1;
    int terms = 0;
    for (int i = root; i < end; i++) {
        const layout_node *nd = &l->node[i];
        if (nd->nkids) continue;
        if (nd->stride != 0) {
            sb_puts(&sb, terms++ ? " + " : "");
            if (i == last)
                sb_printf(&sb, "(%s) / %lld * %lld", x, (long long)div, (long long)nd->stride);
            else
                sb_printf(&sb, "(%s) / %lld %% %lld * %lld", x, (long long)div, (long long)nd->shape,
                          (long long)nd->stride);
        }
        if (i != last) div *= nd->shape;
    }
    char *r = arena_printf(c->ar, "(%s)", terms ? sb_str(&sb) : "0");
    sb_free(&sb);
    return r;
}

static char *lay_swz(cgc *c, const layout *l, char *off)
{
    if (!l->sw.b) return off;
    return arena_printf(c->ar, "tsl_swz(%s, %d, %d, %d)", off, l->sw.b, l->sw.m, l->sw.s);
}

/* layout_eval(l, x) */
static char *lay_eval(cgc *c, const layout *l, const char *x)
{
    return lay_swz(c, l, lay_sub(c, l, 0, x));
}

/* layout_eval_coord(l, coord, n) */
static char *lay_eval_coord(cgc *c, const layout *l, char **coord, int n)
{
    if (!l->node[0].nkids) return lay_eval(c, l, n > 0 ? coord[0] : "0");
    strbuf sb = {0};
    int at = 1;
    for (int k = 0; k < l->node[0].nkids; k++) {
        if (k < n) sb_printf(&sb, "%s%s", k ? " + " : "", lay_sub(c, l, at, coord[k]));
        at += l->node[at].nnodes;
    }
    char *r = lay_swz(c, l, arena_printf(c->ar, "(%s)", sb.len ? sb_str(&sb) : "0"));
    sb_free(&sb);
    return r;
}

/* ---- values --------------------------------------------------------------------------- */

static char *gname(cgc *c, const tile_value *v)
{
    return arena_printf(c->ar, "g%d", v->id);
}

static char *rname(cgc *c, const tile_value *v)
{
    return arena_printf(c->ar, "r%d", v->id);
}

/* Constant dims of a shared or register tensor. */
static int cdims(cgc *c, const tile_value *v, int64_t *dims)
{
    if (v->type.rank > CGC_MAX_RANK) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "tensor '%s' has rank %d; at most %d", v->name, v->type.rank,
                CGC_MAX_RANK);
        return 0;
    }
    for (int i = 0; i < v->type.rank; i++)
        if (!tile_expr_const(v->type.dims[i], &dims[i]) || dims[i] < 1) {
            cg_fail(c, TSL_ERR_SHAPE, "tensor '%s' dim %d is not a positive constant", v->name, i);
            return 0;
        }
    return 1;
}

/* ---- views ------------------------------------------------------------------------------
 * An operand T[...].tile([..])[...] as, per dimension, a chain of steps:
 * coord = off0 + T0(off1 + T1(... x)) (interp view_of / view_map). */

#define CGC_CHAIN 8

typedef struct cgc_view {
    const tile_value *v;
    int rank;
    int nchain[CGC_MAX_RANK];
    const layout *tiler[CGC_MAX_RANK][CGC_CHAIN];
    char *off[CGC_MAX_RANK][CGC_CHAIN];
    int64_t ext[CGC_MAX_RANK]; /* extent; -1: the other operand's */
    int64_t dims[CGC_MAX_RANK]; /* shared: constant dims; .local: the local shape */
    int local;                  /* R.local: coordinates index this thread's slots */
} cgc_view;

/* The thread's local shape of a distributed layout: per dim, the product
 * of its local factors (interp local_shape). Slot of a local coordinate:
 * row-major over it. */
static void local_shape(const dist_layout *l, int64_t *ld)
{
    for (int i = 0; i < l->rank; i++) ld[i] = 1;
    for (int k = 0; k < l->naxes; k++)
        if (!l->axis[k].is_thread && l->axis[k].dim >= 0) ld[l->axis[k].dim] *= l->axis[k].extent;
}

static int view_of(cgc *c, const tile_operand *o, cgc_view *vw)
{
    memset(vw, 0, sizeof *vw);
    if (!o->v || o->v->kind != TILE_V_TENSOR) {
        cg_fail(c, TSL_ERR_SEMANTIC, "expected a tensor operand");
        return 0;
    }
    const tile_value *v = o->v;
    vw->v = v;
    vw->rank = v->type.rank;
    if ((vw->rank < 1 && v->type.space != TILE_GLOBAL) || vw->rank > CGC_MAX_RANK) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "tensor '%s' has rank %d (1..%d here)", v->name, vw->rank,
                CGC_MAX_RANK);
        return 0;
    }
    if (v->type.space != TILE_GLOBAL && !cdims(c, v, vw->dims)) return 0;
    for (int i = 0; i < vw->rank; i++) vw->ext[i] = -1;
    int tiled = 0;
    const layout *ptiler[CGC_MAX_RANK];
    int64_t psize[CGC_MAX_RANK];
    for (int s = 0; s < o->nsteps; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_LOCAL) {
            if (!c->in_decomp || s != 0 || v->type.space != TILE_REGISTER || !v->type.layout ||
                v->type.layout->v.kind != LAYOUT_VALUE_DIST) {
                cg_fail(c, TSL_ERR_SEMANTIC,
                        "'.local' is the thread's part of a register tensor, inside a decomposition");
                return 0;
            }
            const dist_layout *dl = &v->type.layout->v.dist;
            vw->local = 1;
            vw->rank = dl->rank;
            local_shape(dl, vw->dims);
            for (int i = 0; i < vw->rank; i++) vw->ext[i] = vw->dims[i];
            continue;
        }
        if (st->n > vw->rank) {
            cg_fail(c, TSL_ERR_SHAPE, "%d indices for '%s' of rank %d", st->n, v->name, vw->rank);
            return 0;
        }
        if (st->kind == TILE_STEP_TILE) {
            if (tiled) {
                cg_fail(c, TSL_ERR_SEMANTIC, "tile of a tensor of tiles: index it first");
                return 0;
            }
            tiled = 1;
            for (int i = 0; i < vw->rank; i++) {
                int j = i - (vw->rank - st->n); /* tilers right-aligned */
                ptiler[i] = j >= 0 && st->tilers[j] ? &st->tilers[j]->v.data : NULL;
                psize[i] = j >= 0 ? st->sizes[j] : 1;
            }
            continue;
        }
        for (int i = 0; i < vw->rank; i++) {
            if (vw->nchain[i] == CGC_CHAIN) {
                cg_fail(c, TSL_ERR_UNAVAILABLE, "view chain too deep");
                return 0;
            }
            char *x = i < st->n ? tmp_int(c, st->idx[i]) : "((int64_t)0)";
            const layout *tl = NULL;
            char *off = x;
            if (tiled) {
                if (ptiler[i]) {
                    /* tile x of a non-contiguous tiler: offset = complement(tiler)(x) */
                    int64_t ext = vw->ext[i] >= 0 ? vw->ext[i] : vw->dims[i];
                    if (v->type.space == TILE_GLOBAL && vw->ext[i] < 0 &&
                        !tile_expr_const(v->type.dims[i], &ext)) {
                        cg_fail(c, TSL_ERR_UNAVAILABLE,
                                "a non-contiguous tile of global '%s' dim %d needs a constant extent",
                                v->name, i);
                        return 0;
                    }
                    layout *comp = arena_alloc(c->ar, sizeof *comp);
                    layout_err le = {{0}, 0};
                    if (layout_complement(comp, ptiler[i], ext, &le)) {
                        cg_fail(c, TSL_ERR_SEMANTIC, "tile of '%s' dim %d: %s", v->name, i, le.msg);
                        return 0;
                    }
                    off = lay_eval(c, comp, x);
                    tl = ptiler[i];
                } else {
                    off = arena_printf(c->ar, "(%s * %lld)", x, (long long)psize[i]);
                }
                vw->ext[i] = psize[i];
            }
            vw->tiler[i][vw->nchain[i]] = tl;
            vw->off[i][vw->nchain[i]] = off;
            vw->nchain[i]++;
        }
        tiled = 0;
    }
    if (tiled) {
        cg_fail(c, TSL_ERR_SEMANTIC, "a tensor of tiles must be indexed to be transferred");
        return 0;
    }
    return 1;
}

/* Base coordinate of view dim i for view coordinate expression x. */
static char *view_map(cgc *c, const cgc_view *vw, int i, const char *x)
{
    char *r = arena_strdup(c->ar, x);
    for (int s = vw->nchain[i] - 1; s >= 0; s--) {
        char *in = vw->tiler[i][s] ? lay_eval(c, vw->tiler[i][s], r) : r;
        r = arena_printf(c->ar, "(%s + %s)", vw->off[i][s], in);
    }
    return r;
}

/* A tile of rank r and dims fits the view (interp view_fit): extents
 * agree where the view has one, and dims the view lacks are 1 (so the
 * slots' leading coordinates are 0). */
static int view_fit_dims(cgc *c, const cgc_view *vw, const int64_t *dims, int r)
{
    int lead = vw->rank - r;
    for (int i = 0; i < vw->rank; i++) {
        int j = i - lead;
        if (j >= 0 && vw->ext[i] >= 0 && vw->ext[i] != dims[j]) {
            cg_fail(c, TSL_ERR_SHAPE, "tile of '%s' has extent %lld in dim %d, the other operand %lld",
                    vw->v->name, (long long)vw->ext[i], i, (long long)dims[j]);
            return 0;
        }
    }
    for (int j = 0; j < -lead; j++)
        if (dims[j] != 1) {
            cg_fail(c, TSL_ERR_SHAPE, "a rank-%d tile does not fit '%s' of rank %d", r, vw->v->name, vw->rank);
            return 0;
        }
    return 1;
}

static int view_fit(cgc *c, const cgc_view *vw, int t)
{
    return view_fit_dims(c, vw, c->tabv[t].dims, c->tabv[t].rank);
}

/* View coordinate expression of view dim i from register coordinates
 * `rc` (C array expression, e.g. TC3[i]) of rank r, right-aligned. */
static char *view_vc(cgc *c, const cgc_view *vw, int r, const char *rc, int i)
{
    int lead = vw->rank - r;
    int j = i - lead;
    if (j < 0) return "(int64_t)0";
    return arena_printf(c->ar, "(int64_t)%s[%d]", rc, j);
}

/* Emit `const int64_t cN = ...` for every dim of the view from register
 * coordinates; gives the names. */
static char **emit_coords(cgc *c, const cgc_view *vw, int r, const char *rc, const char *pfx)
{
    char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    for (int i = 0; i < vw->rank; i++) {
        cs[i] = arena_printf(c->ar, "%s%d", pfx, i);
        L(c, "const int64_t %s = %s;", cs[i], view_map(c, vw, i, view_vc(c, vw, r, rc, i)));
    }
    return cs;
}

/* Condition "coordinate inside the global tensor". */
static char *global_inb(cgc *c, const cgc_view *vw, char **cs)
{
    strbuf sb = {0};
    const char *g = gname(c, vw->v);
    for (int i = 0; i < vw->rank; i++)
        sb_printf(&sb, "%s(uint64_t)%s < (uint64_t)%s_d%d", i ? " && " : "", cs[i], g, i);
    char *r = arena_strdup(c->ar, vw->rank ? sb_str(&sb) : "1");
    sb_free(&sb);
    return r;
}

static char *global_elem(cgc *c, const cgc_view *vw, char **cs)
{
    strbuf sb = {0};
    const char *g = gname(c, vw->v);
    sb_printf(&sb, "%s[", g);
    if (!vw->rank) sb_puts(&sb, "0"); /* rank 0: the one element */
    for (int i = 0; i < vw->rank; i++) sb_printf(&sb, "%s%s * %s_s%d", i ? " + " : "", cs[i], g, i);
    sb_puts(&sb, "]");
    char *r = arena_strdup(c->ar, sb_str(&sb));
    sb_free(&sb);
    return r;
}

/* Shared access: a bounds check returning a run-time error, then the
 * element expression through the tensor's data layout. */
static char *shared_elem(cgc *c, const cgc_view *vw, char **cs, int write)
{
    strbuf sb = {0};
    for (int i = 0; i < vw->rank; i++)
        sb_printf(&sb, "%s(uint64_t)%s >= %lldu", i ? " || " : "", cs[i], (long long)vw->dims[i]);
    int id = cg_err(c, TSL_ERR_BOUNDS, "%s of shared '%s' outside its shape", write ? "write" : "read",
                    vw->v->name);
    L(c, "if (%s) return %d;", sb_str(&sb), id);
    sb_free(&sb);
    const tile_layout *tl = vw->v->type.layout;
    char *off;
    if (tl && tl->v.kind == LAYOUT_VALUE_DATA) {
        off = lay_eval_coord(c, &tl->v.data, cs, vw->rank);
    } else {
        strbuf o = {0};
        for (int i = 0; i < vw->rank; i++) {
            int64_t rest = 1;
            for (int j = i + 1; j < vw->rank; j++) rest *= vw->dims[j];
            sb_printf(&o, "%s%s * %lld", i ? " + " : "", cs[i], (long long)rest);
        }
        off = arena_strdup(c->ar, sb_str(&o));
        sb_free(&o);
    }
    return arena_printf(c->ar, "s%d[%s]", vw->v->id, off);
}

/* ---- destinations ------------------------------------------------------------------------- */

/* The register tensor an instruction writes: its result or `-> dst`. */
static const tile_value *reg_dst(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (in->result) {
        if (in->result->type.space != TILE_REGISTER) {
            cg_fail(c, TSL_ERR_SEMANTIC, "the result must be a register tensor");
            return NULL;
        }
        return in->result;
    }
    if (in->has_dst && in->dst.v && in->dst.v->kind == TILE_V_TENSOR && !in->dst.nsteps &&
        in->dst.v->type.space == TILE_REGISTER)
        return in->dst.v;
    cg_fail(c, TSL_ERR_SEMANTIC, "the destination must be a whole register tensor");
    return NULL;
}

static const tile_value *reg_arg(cgc *c, const tile_operand *o)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_REGISTER || o->nsteps) {
        cg_fail(c, TSL_ERR_SEMANTIC, "'%s' must be a whole register tensor here", o->v ? o->v->name : "?");
        return NULL;
    }
    return o->v;
}

static int rt(cgc *c, const tile_value *v)
{
    return c->rtab[v->id];
}

static void need_scratch(cgc *c, int64_t bytes)
{
    if (bytes > c->scratch) c->scratch = bytes;
}

/* ---- transfers ------------------------------------------------------------------------------ */

static void emit_load(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    cgc_view src;
    const tile_value *d = reg_dst(c, s);
    if (!d || !view_of(c, &in->args[0], &src)) return;
    int want = in->op == TILE_I_LOAD_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
    if ((int)src.v->type.space != want) {
        cg_fail(c, TSL_ERR_SEMANTIC, "%s reads a %s tensor; '%s' is %s", tile_op_info_of(in->op)->name,
                tile_space_name((tile_space)want), src.v->name, tile_space_name(src.v->type.space));
        return;
    }
    int t = rt(c, d);
    if (!view_fit(c, &src, t)) return;
    const cgc_tab *tb = &c->tabv[t];
    tile_dtype md = src.v->type.dt, rd = d->type.dt;
    const char *fill = in->init ? cnum(c, in->init) : "0.0";
    if (want == TILE_GLOBAL) L(c, "const %s fill = %s;", reg_ctype(rd), rnd(c, rd, fill));
    const char *tc = tab_coord(c, t);
    L(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    L(c, "if (%s[i][0] < 0) {", tc);
    L(c, "    %s[i] = %s;", rname(c, d), pad_value(rd));
    L(c, "    continue;");
    L(c, "}");
    char **cs = emit_coords(c, &src, tb->rank, arena_printf(c->ar, "%s[i]", tc), "c");
    if (want == TILE_GLOBAL) {
        L(c, "%s[i] = (%s) ? %s : fill;", rname(c, d), global_inb(c, &src, cs),
          load_conv(c, md, rd, global_elem(c, &src, cs)));
    } else {
        char *e = shared_elem(c, &src, cs, 0);
        L(c, "%s[i] = %s;", rname(c, d), load_conv(c, md, rd, e));
    }
    c->ind--;
    L(c, "}");
}

static void emit_store(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    cgc_view dst;
    const tile_value *r = reg_arg(c, &in->args[0]);
    if (!r) return;
    if (!in->has_dst) {
        cg_fail(c, TSL_ERR_SEMANTIC, "store needs '-> destination'");
        return;
    }
    if (!view_of(c, &in->dst, &dst)) return;
    int want = in->op == TILE_I_STORE_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
    if ((int)dst.v->type.space != want) {
        cg_fail(c, TSL_ERR_SEMANTIC, "%s writes a %s tensor; '%s' is %s", tile_op_info_of(in->op)->name,
                tile_space_name((tile_space)want), dst.v->name, tile_space_name(dst.v->type.space));
        return;
    }
    int t = rt(c, r);
    if (!view_fit(c, &dst, t)) return;
    const cgc_tab *tb = &c->tabv[t];
    const char *tc = tab_coord(c, t), *to = tab_own(c, t);
    L(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    L(c, "if (!%s[i]) continue;", to);
    char **cs = emit_coords(c, &dst, tb->rank, arena_printf(c->ar, "%s[i]", tc), "c");
    char *val = store_conv(c, r->type.dt, dst.v->type.dt, arena_printf(c->ar, "%s[i]", rname(c, r)));
    if (want == TILE_GLOBAL) {
        L(c, "if (%s) %s = %s;", global_inb(c, &dst, cs), global_elem(c, &dst, cs), val);
    } else {
        char *e = shared_elem(c, &dst, cs, 1);
        L(c, "%s = %s;", e, val);
    }
    c->ind--;
    L(c, "}");
}

/* copy_async global -> shared: the tile is the shared tensor, its slice
 * S[i, ...] of the trailing dims, or a tile of a tiled view; taken from
 * the global tensor right-aligned at the source's offsets, zero past the
 * bounds (interp exec_copy_async). */
static void emit_copy_async(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    cgc_view src, dst;
    if (!in->has_dst) {
        cg_fail(c, TSL_ERR_SEMANTIC, "copy_async needs '-> destination'");
        return;
    }
    if (!view_of(c, &in->args[0], &src) || !view_of(c, &in->dst, &dst)) return;
    if (src.v->type.space != TILE_GLOBAL || dst.v->type.space != TILE_SHARED) {
        cg_fail(c, TSL_ERR_SEMANTIC, "copy_async copies global -> shared");
        return;
    }
    /* leading dims fixed by an untiled index (S[i, ...]) */
    int lead = 0;
    if (in->dst.nsteps == 1 && in->dst.steps[0].kind == TILE_STEP_INDEX) lead = in->dst.steps[0].n;
    if (lead >= dst.rank) {
        cg_fail(c, TSL_ERR_SHAPE, "copy_async: %d indices leave nothing of '%s'", lead, dst.v->name);
        return;
    }
    int trank = dst.rank - lead;
    int64_t box[CGC_MAX_RANK];
    for (int i = 0; i < trank; i++) box[i] = dst.ext[lead + i] >= 0 ? dst.ext[lead + i] : dst.dims[lead + i];
    if (!view_fit_dims(c, &src, box, trank)) return;
    for (int i = 0; i < trank; i++) {
        L(c, "for (int64_t e%d = 0; e%d < %lld; e%d++) {", i, i, (long long)box[i], i);
        c->ind++;
    }
    char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    char **cd = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    for (int i = 0; i < dst.rank; i++) {
        cd[i] = arena_printf(c->ar, "cd%d", i);
        L(c, "const int64_t %s = %s;", cd[i],
          view_map(c, &dst, i, i < lead ? "(int64_t)0" : arena_printf(c->ar, "e%d", i - lead)));
    }
    int sl = src.rank - trank; /* right-aligned: leading source dims get 0 */
    for (int i = 0; i < src.rank; i++) {
        cs[i] = arena_printf(c->ar, "cs%d", i);
        L(c, "const int64_t %s = %s;", cs[i],
          view_map(c, &src, i, i < sl ? "(int64_t)0" : arena_printf(c->ar, "e%d", i - sl)));
    }
    char *e = shared_elem(c, &dst, cd, 1);
    tile_dtype sd = src.v->type.dt, dd = dst.v->type.dt;
    char *val;
    if (tile_dtype_eq(sd, dd))
        val = arena_printf(c->ar, "(%s) ? %s : (%s)0", global_inb(c, &src, cs), global_elem(c, &src, cs),
                           mem_ctype(dd));
    else
        val = dbl_to_mem(c, dd, arena_printf(c->ar, "(%s) ? %s : 0.0", global_inb(c, &src, cs),
                                             mem_to_dbl(c, sd, global_elem(c, &src, cs))));
    L(c, "%s = %s;", e, val);
    for (int i = 0; i < trank; i++) {
        c->ind--;
        L(c, "}");
    }
}

/* ---- register instructions ------------------------------------------------------------------ */

static void emit_alloc(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *r = in->result;
    if (!r) {
        cg_fail(c, TSL_ERR_SEMANTIC, "alloc needs a result name");
        return;
    }
    if (r->type.space == TILE_REGISTER) {
        const cgc_tab *tb = &c->tabv[rt(c, r)];
        const char *v = in->init ? rnd(c, r->type.dt, cnum(c, in->init)) : pad_value(r->type.dt);
        L(c, "for (int64_t i = 0; i < %lld; i++) %s[i] = %s;", (long long)tb->ns, rname(c, r), v);
        return;
    }
    if (r->type.space != TILE_SHARED) {
        cg_fail(c, TSL_ERR_SEMANTIC, "alloc of a global tensor");
        return;
    }
    if (!in->init) return; /* shared: whatever the bytes were */
    cgc_view vw;
    tile_operand o = tile_operand_tensor((tile_value *)r);
    if (!view_of(c, &o, &vw)) return;
    L(c, "const %s fill = %s;", mem_ctype(r->type.dt), dbl_to_mem(c, r->type.dt, cnum(c, in->init)));
    char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    for (int i = 0; i < vw.rank; i++) {
        cs[i] = arena_printf(c->ar, "e%d", i);
        L(c, "for (int64_t e%d = 0; e%d < %lld; e%d++) {", i, i, (long long)vw.dims[i], i);
        c->ind++;
    }
    L(c, "%s = fill;", shared_elem(c, &vw, cs, 1));
    for (int i = 0; i < vw.rank; i++) {
        c->ind--;
        L(c, "}");
    }
}

/* Elementwise ops, one row each: the interpreter's formula over doubles
 * x, y, z (the operands' held values) and, where it exists, the same in
 * float when every operand and the result are held as float. `kind`:
 *   ARITH    the result rounds to the dtype (f32 math for floats <= 32 bits)
 *   IDIV     ARITH, but on integer results a zero divisor is an error
 *   CMP      comparison -> bool (scalar operands converted to the tensor's dtype)
 *   LOGIC    bool operands -> bool
 *   SELECT   x ? y : z, rounded to the result dtype */
typedef enum { CGC_ARITH, CGC_IDIV, CGC_CMP, CGC_LOGIC, CGC_SELECT } cgc_ew_kind;

typedef struct cgc_ew {
    tile_op op;
    cgc_ew_kind kind;
    const char *dbl, *flt;
} cgc_ew;

static const cgc_ew cgc_ew_table[] = {
    {TILE_I_COPY, CGC_ARITH, "x", "x"},
    {TILE_I_CAST, CGC_ARITH, "x", "x"},
    {TILE_I_NEG, CGC_ARITH, "-x", "-x"},
    {TILE_I_ABS, CGC_ARITH, "fabs(x)", "fabsf(x)"},
    {TILE_I_EXP, CGC_ARITH, "(double)expf((float)x)", "expf(x)"},
    {TILE_I_LOG, CGC_ARITH, "(double)logf((float)x)", "logf(x)"},
    {TILE_I_SQRT, CGC_ARITH, "(double)sqrtf((float)x)", "sqrtf(x)"},
    {TILE_I_RSQRT, CGC_ARITH, "(double)(1.0f / sqrtf((float)x))", "1.0f / sqrtf(x)"},
    {TILE_I_TANH, CGC_ARITH, "(double)tanhf((float)x)", "tanhf(x)"},
    {TILE_I_SIGMOID, CGC_ARITH, "(double)(1.0f / (1.0f + expf(-(float)x)))", "1.0f / (1.0f + expf(-x))"},
    {TILE_I_RELU, CGC_ARITH, "x > 0 ? x : 0.0", "x > 0 ? x : 0.0f"},
    {TILE_I_ERF, CGC_ARITH, "(double)erff((float)x)", "erff(x)"},
    {TILE_I_ADD, CGC_ARITH, "x + y", "x + y"},
    {TILE_I_SUB, CGC_ARITH, "x - y", "x - y"},
    {TILE_I_MUL, CGC_ARITH, "x * y", "x * y"},
    {TILE_I_DIV, CGC_IDIV, "x / y", "x / y"},
    {TILE_I_MAX, CGC_ARITH, "x > y ? x : y", "x > y ? x : y"},
    {TILE_I_MIN, CGC_ARITH, "x < y ? x : y", "x < y ? x : y"},
    {TILE_I_MOD, CGC_IDIV, "(double)fmodf((float)x, (float)y)", "fmodf(x, y)"},
    {TILE_I_POW, CGC_ARITH, "(double)powf((float)x, (float)y)", "powf(x, y)"},
    {TILE_I_NOT, CGC_LOGIC, "!(x != 0)", NULL},
    {TILE_I_AND, CGC_LOGIC, "(x != 0) && (y != 0)", NULL},
    {TILE_I_OR, CGC_LOGIC, "(x != 0) || (y != 0)", NULL},
    {TILE_I_LT, CGC_CMP, "x < y", NULL},
    {TILE_I_LE, CGC_CMP, "x <= y", NULL},
    {TILE_I_GT, CGC_CMP, "x > y", NULL},
    {TILE_I_GE, CGC_CMP, "x >= y", NULL},
    {TILE_I_EQ, CGC_CMP, "x == y", NULL},
    {TILE_I_NE, CGC_CMP, "x != y", NULL},
    {TILE_I_SELECT, CGC_SELECT, "x != 0 ? y : z", NULL},
};

static int is_fltreg(tile_dtype t)
{
    return t.kind == TILE_DT_FLOAT && t.bits <= 32;
}

static int is_intreg(tile_dtype t)
{
    return t.kind == TILE_DT_INT || t.kind == TILE_DT_UINT;
}

/* An elementwise operand: a register tensor laid out like `like`, or a
 * scalar (expr or scalar parameter). *val is the slot's value expression
 * (a double for scalars); *flt whether it is float-held; *t the tensor. */
static int ew_operand(cgc *c, const tile_operand *o, const tile_value *like, char **val, int *flt,
                      const tile_value **t)
{
    *t = NULL;
    *flt = 0;
    if (!o->v) {
        *val = cnum(c, o->scalar);
        return 1;
    }
    if (o->v->kind == TILE_V_SCALAR) {
        *val = arena_printf(c->ar, "(double)v%d", o->v->id);
        return 1;
    }
    const tile_value *x = reg_arg(c, o);
    if (!x) return 0;
    const cgc_tab *a = &c->tabv[rt(c, x)], *b = &c->tabv[rt(c, like)];
    if (!dist_layout_equal(a->lay, b->lay) || a->rank != b->rank ||
        memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank)) {
        cg_fail(c, TSL_ERR_SHAPE,
                "'%s' is not laid out like the result (same shape and layout needed; use copy "
                "through shared memory to change layout)", x->name);
        return 0;
    }
    *val = arena_printf(c->ar, "%s[i]", rname(c, x));
    *flt = is_fltreg(x->type.dt);
    *t = x;
    return 1;
}

static void emit_elementwise(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *d = reg_dst(c, s);
    if (!d) return;
    const cgc_ew *row = NULL;
    for (size_t i = 0; i < TSL_COUNTOF(cgc_ew_table); i++)
        if (cgc_ew_table[i].op == in->op) row = &cgc_ew_table[i];
    if (!row || in->nargs < 1 || in->nargs > 3) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "no elementwise emitter for '%s'", tile_op_info_of(in->op)->name);
        return;
    }
    char *v[3] = {NULL, NULL, NULL};
    int fl[3] = {1, 1, 1}, n = in->nargs;
    const tile_value *tv[3] = {NULL, NULL, NULL}, *first = NULL;
    for (int a = 0; a < n; a++) {
        if (!ew_operand(c, &in->args[a], d, &v[a], &fl[a], &tv[a])) return;
        if (tv[a] && !first && !(row->kind == CGC_SELECT && a == 0)) first = tv[a];
    }
    /* new-style rows convert a scalar operand to the tensor's dtype first */
    if (in->op >= TILE_I_IOTA && first)
        for (int a = 0; a < n; a++)
            if (!tv[a] && !(row->kind == CGC_SELECT && a == 0))
                v[a] = arena_printf(c->ar, "(double)%s", rnd(c, first->type.dt, v[a]));
    tile_dtype dt = d->type.dt;
    int cast = in->op == TILE_I_CAST;
    int flt = row->flt && is_fltreg(dt);
    for (int a = 0; a < n; a++) flt &= fl[a];
    const cgc_tab *tb = &c->tabv[rt(c, d)];
    const char *names = "xyz";
    int zerodiv = row->kind == CGC_IDIV && is_intreg(dt);
    int id = zerodiv ? cg_err(c, TSL_ERR_RUNTIME, "integer division by zero") : 0;
    const char *tc = zerodiv ? tab_coord(c, rt(c, d)) : NULL;
    L(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    for (int a = 0; a < n; a++) L(c, "const %s %c = %s;", flt ? "float" : "double", names[a], v[a]);
    if (flt) {
        const char *e = arena_printf(c->ar, "(%s)", row->flt);
        L(c, "%s[i] = %s;", rname(c, d), dt.bits == 32 ? e : rnd(c, dt, e));
    } else if (zerodiv) {
        /* C semantics on integers: truncating division, remainder with the
         * sign of x; a zero divisor in a slot inside the tensor is an error */
        L(c, "if (y == 0) {");
        L(c, "    if (%s[i][0] >= 0) return %d;", tc, id);
        L(c, "    %s[i] = 0;", rname(c, d));
        L(c, "    continue;");
        L(c, "}");
        L(c, "%s[i] = %s;", rname(c, d),
          rnd(c, dt, in->op == TILE_I_DIV ? "trunc(x / y)" : "(double)((int64_t)x % (y == -1 ? 1 : (int64_t)y))"));
    } else {
        const char *e = arena_printf(c->ar, "(%s)", row->dbl);
        if (row->kind == CGC_CMP || row->kind == CGC_LOGIC) {
            L(c, "%s[i] = (%s)%s;", rname(c, d), reg_ctype(dt), e);
        } else {
            /* arithmetic on f16/bf16/f32 happens in f32, then rounds to the dtype */
            if (!cast && row->kind != CGC_SELECT && dt.kind == TILE_DT_FLOAT && dt.bits <= 32)
                e = arena_printf(c->ar, "(double)(float)%s", e);
            L(c, "%s[i] = %s;", rname(c, d), rnd(c, dt, e));
        }
    }
    c->ind--;
    L(c, "}");
}

/* iota [OFF] dim D: each element is its coordinate along D plus OFF. */
static void emit_iota(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *d = reg_dst(c, s);
    if (!d) return;
    const cgc_tab *tb = &c->tabv[rt(c, d)];
    if (in->dim < 0 || in->dim >= tb->rank) {
        cg_fail(c, TSL_ERR_SHAPE, "iota: dim %d of a rank-%d result", in->dim, tb->rank);
        return;
    }
    const char *off = in->nargs && in->args[0].scalar ? tmp_int(c, in->args[0].scalar) : "((int64_t)0)";
    const char *tc = tab_coord(c, rt(c, d));
    L(c, "for (int64_t i = 0; i < %lld; i++)", (long long)tb->ns);
    L(c, "    %s[i] = %s[i][0] < 0 ? %s : %s;", rname(c, d), tc, pad_value(d->type.dt),
      rnd(c, d->type.dt, arena_printf(c->ar, "(double)((int64_t)%s[i][%d] + %s)", tc, in->dim, off)));
}

/* gather T, i... -> R [mask M] / scatter x -> T, i... [mask M]: per lane
 * (a slot inside the tensor), the element of global T at the indices; a
 * masked-off lane moves nothing (gather: 0); an index outside T's extent
 * is a run-time error naming the tensor, dim, index and bound. */
static void emit_gather(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    int gather = in->op == TILE_I_GATHER;
    const tile_operand *top = gather ? &in->args[0] : in->has_dst ? &in->dst : NULL;
    const tile_value *lanes = gather ? reg_dst(c, s) : reg_arg(c, &in->args[0]);
    if (!lanes) return;
    if (!top || !top->v || top->v->kind != TILE_V_TENSOR || top->v->type.space != TILE_GLOBAL || top->nsteps) {
        cg_fail(c, TSL_ERR_SEMANTIC, "%s: the tensor must be a whole global tensor", gather ? "gather" : "scatter");
        return;
    }
    const tile_value *T = top->v;
    int r = T->type.rank, first = gather ? 1 : 1;
    if (in->nargs - first != r) {
        cg_fail(c, TSL_ERR_SHAPE, "%s: %d indices for '%s' of rank %d", gather ? "gather" : "scatter",
                in->nargs - first, T->name, r);
        return;
    }
    char *idx[CGC_MAX_RANK];
    for (int j = 0; j < r; j++) {
        const tile_operand *o = &in->args[first + j];
        if (!o->v) {
            idx[j] = tmp_int(c, o->scalar);
        } else if (o->v->kind == TILE_V_SCALAR) {
            idx[j] = arena_printf(c->ar, "v%d", o->v->id);
        } else {
            char *val;
            int fl;
            const tile_value *t;
            if (!ew_operand(c, o, lanes, &val, &fl, &t)) return;
            if (!is_intreg(t->type.dt)) {
                cg_fail(c, TSL_ERR_SEMANTIC, "index '%s' must be an integer tensor", t->name);
                return;
            }
            idx[j] = arena_printf(c->ar, "(int64_t)%s", val);
        }
    }
    const cgc_tab *tb = &c->tabv[rt(c, lanes)];
    const char *tc = tab_coord(c, rt(c, lanes)), *g = gname(c, T);
    L(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    if (gather) {
        L(c, "if (%s[i][0] < 0) {", tc);
        L(c, "    %s[i] = %s;", rname(c, lanes), pad_value(lanes->type.dt));
        L(c, "    continue;");
        L(c, "}");
    } else {
        L(c, "if (%s[i][0] < 0) continue;", tc);
    }
    if (in->mask) {
        if (rt(c, in->mask) < 0 || !dist_layout_equal(c->tabv[rt(c, in->mask)].lay, tb->lay)) {
            cg_fail(c, TSL_ERR_SHAPE, "mask '%s' must be laid out like the lanes", in->mask->name);
            return;
        }
        if (gather) {
            L(c, "if (!%s[i]) {", rname(c, in->mask));
            L(c, "    %s[i] = 0;", rname(c, lanes));
            L(c, "    continue;");
            L(c, "}");
        } else {
            L(c, "if (!%s[i]) continue;", rname(c, in->mask));
        }
    }
    strbuf off = {0};
    for (int j = 0; j < r; j++) {
        L(c, "const int64_t x%d = %s;", j, idx[j]);
        int id = cg_err(c, TSL_ERR_BOUNDS, "%s of '%s': index %%lld in dim %d is outside [0, %%lld)",
                        gather ? "gather" : "scatter", T->name, j);
        c->errs[id - 1].info = 1;
        L(c, "if ((uint64_t)x%d >= (uint64_t)%s_d%d) {", j, g, j);
        L(c, "    info[0] = x%d;", j);
        L(c, "    info[1] = %s_d%d;", g, j);
        L(c, "    return %d;", id);
        L(c, "}");
        sb_printf(&off, "%sx%d * %s_s%d", j ? " + " : "", j, g, j);
    }
    if (!r) sb_puts(&off, "0"); /* a rank-0 tensor: its one element */
    if (gather)
        L(c, "%s[i] = %s;", rname(c, lanes),
          load_conv(c, T->type.dt, lanes->type.dt, arena_printf(c->ar, "%s[%s]", g, sb_str(&off))));
    else
        L(c, "%s[%s] = %s;", g, sb_str(&off),
          store_conv(c, lanes->type.dt, T->type.dt, arena_printf(c->ar, "%s[i]", rname(c, lanes))));
    sb_free(&off);
    c->ind--;
    L(c, "}");
}

/* view: the same bytes per thread reinterpreted. */
static void emit_view(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *x = reg_arg(c, &in->args[0]), *d = x ? reg_dst(c, s) : NULL;
    if (!d) return;
    const cgc_tab *tx = &c->tabv[rt(c, x)], *td = &c->tabv[rt(c, d)];
    tile_dtype xd = x->type.dt, dd = d->type.dt;
    if (!dt_ok(xd) || !dt_ok(dd)) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "view: only byte-sized dtypes are reinterpreted here");
        return;
    }
    if (tx->nlocals * xd.bits != td->nlocals * dd.bits || tx->nthreads != td->nthreads) {
        cg_fail(c, TSL_ERR_SHAPE, "view: each thread holds %lld bits of '%s' but %lld bits of the result",
                (long long)(tx->nlocals * xd.bits), x->name, (long long)(td->nlocals * dd.bits));
        return;
    }
    int64_t nb = tx->nlocals * xd.bits / 8, xs = xd.bits / 8, ds = dd.bits / 8;
    need_scratch(c, td->ns * reg_size(dd) + nb + 64);
    L(c, "%s *const tmp = (%s *)scratch;", reg_ctype(dd), reg_ctype(dd));
    L(c, "unsigned char *const buf = (unsigned char *)scratch + %lld;", (long long)align_up(td->ns * reg_size(dd), 16));
    L(c, "for (int64_t th = 0; th < %lld; th++) {", (long long)tx->nthreads);
    c->ind++;
    L(c, "for (int64_t l = 0; l < %lld; l++) {", (long long)tx->nlocals);
    L(c, "    const %s m = %s;", mem_ctype(xd),
      store_conv(c, xd, xd, arena_printf(c->ar, "%s[th * %lld + l]", rname(c, x), (long long)tx->nlocals)));
    L(c, "    memcpy(buf + l * %lld, &m, %lld);", (long long)xs, (long long)xs);
    L(c, "}");
    L(c, "for (int64_t l = 0; l < %lld; l++) {", (long long)td->nlocals);
    L(c, "    %s m;", mem_ctype(dd));
    L(c, "    memcpy(&m, buf + l * %lld, %lld);", (long long)ds, (long long)ds);
    L(c, "    tmp[th * %lld + l] = %s;", (long long)td->nlocals, load_conv(c, dd, dd, "m"));
    L(c, "}");
    c->ind--;
    L(c, "}");
    L(c, "memcpy(%s, tmp, %lld);", rname(c, d), (long long)(td->ns * reg_size(dd)));
}

/* reduce.{sum,max,min} dim D (interp exec_reduce): per result coordinate,
 * the source slots (lowest owners, in slot order) accumulated in f32;
 * every owner of the result coordinate gets the value. */
static void emit_reduce(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *x = reg_arg(c, &in->args[0]), *d = x ? reg_dst(c, s) : NULL;
    if (!d) return;
    const cgc_tab *tx = &c->tabv[rt(c, x)], *td = &c->tabv[rt(c, d)];
    int dim = in->dim, keep = td->rank == tx->rank;
    if (dim < 0 || dim >= tx->rank || (!keep && td->rank != tx->rank - 1)) {
        cg_fail(c, TSL_ERR_SHAPE, "reduce: dim %d, input rank %d, result rank %d", dim, tx->rank, td->rank);
        return;
    }
    /* group of a result slot = its coordinate's lowest owner; lists per group */
    int64_t *grp = calloc((size_t)td->ns + 1, sizeof *grp);
    int64_t *cnt = calloc((size_t)td->ns + 1, sizeof *cnt);
    int64_t *srcs = malloc(sizeof *srcs * (size_t)(tx->ns + 1));
    int64_t *dsts = malloc(sizeof *dsts * (size_t)(tx->ns + 1));
    int64_t *start = calloc((size_t)td->ns + 2, sizeof *start);
    int64_t *list = malloc(sizeof *list * (size_t)(tx->ns + 1));
    int64_t *fill = calloc((size_t)td->ns + 1, sizeof *fill);
    if (!grp || !cnt || !srcs || !dsts || !start || !list || !fill) {
        cg_fail(c, TSL_ERR_NOMEM, "out of memory");
        goto out;
    }
    int64_t n = 0;
    for (int64_t k = 0; k < td->ns; k++) grp[k] = -1;
    for (int64_t sl = 0; sl < tx->ns; sl++) {
        if (!tx->own[sl]) continue;
        const int32_t *cc = &tx->coord[sl * tx->rank];
        int64_t full[DIST_MAX_RANK], th[64], lo[64];
        int lead = td->lay->rank - td->rank, r = lead;
        for (int i = 0; i < lead; i++) full[i] = 0;
        for (int i = 0; i < tx->rank; i++)
            if (i != dim) full[r++] = cc[i];
            else if (keep) full[r++] = 0;
        int64_t no = dist_layout_owners(td->lay, full, th, lo, 64), ot, ol;
        if (no <= 0 || dist_layout_owner(td->lay, full, &ot, &ol)) continue;
        int64_t g = ot * td->nlocals + ol;
        for (int64_t o = 0; o < no && o < 64; o++) grp[th[o] * td->nlocals + lo[o]] = g;
        srcs[n] = sl;
        dsts[n++] = g;
        cnt[g]++;
    }
    for (int64_t g = 0; g < td->ns; g++) start[g + 1] = start[g] + cnt[g];
    for (int64_t i = 0; i < n; i++) list[start[dsts[i]] + fill[dsts[i]]++] = srcs[i];
    int64_t *starts32 = start; /* [ns+1] */
    const char *ts = emit_i32_table(c, "reduce: first source of each group", starts32, td->ns + 1);
    const char *tl = emit_i32_table(c, "reduce: source slots by group, in slot order", list, n);
    const char *tg = emit_i32_table(c, "reduce: group of each result slot, -1 none", grp, td->ns);
    need_scratch(c, td->ns * 8 + 64);
    const char *op = in->op == TILE_I_REDUCE_SUM ? "acc = (float)(acc + v);"
                     : in->op == TILE_I_REDUCE_MAX ? "acc = v > acc ? v : acc;"
                                                   : "acc = v < acc ? v : acc;";
    L(c, "double *const acc_ = (double *)scratch;");
    L(c, "for (int64_t g = 0; g < %lld; g++) {", (long long)td->ns);
    c->ind++;
    L(c, "if (%s[g] == %s[g + 1]) continue;", ts, ts);
    L(c, "double acc = (double)%s[%s[%s[g]]];", rname(c, x), tl, ts);
    L(c, "for (int32_t j = %s[g] + 1; j < %s[g + 1]; j++) {", ts, ts);
    L(c, "    const double v = (double)%s[%s[j]];", rname(c, x), tl);
    L(c, "    %s", op);
    L(c, "}");
    L(c, "acc_[g] = acc;");
    c->ind--;
    L(c, "}");
    L(c, "for (int64_t k = 0; k < %lld; k++)", (long long)td->ns);
    L(c, "    %s[k] = %s[k] < 0 ? %s : %s;", rname(c, d), tg, pad_value(d->type.dt),
      rnd(c, d->type.dt, arena_printf(c->ar, "acc_[%s[k]]", tg)));
out:
    free(grp);
    free(cnt);
    free(srcs);
    free(dsts);
    free(start);
    free(list);
    free(fill);
}

/* broadcast dim D: result[c] = x[c with dim D at 0 (or dropped)]. */
static void emit_broadcast(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *x = reg_arg(c, &in->args[0]), *d = x ? reg_dst(c, s) : NULL;
    if (!d) return;
    const cgc_tab *tx = &c->tabv[rt(c, x)], *td = &c->tabv[rt(c, d)];
    int dim = in->dim;
    if (dim < 0 || dim >= td->rank || (tx->rank != td->rank && tx->rank != td->rank - 1)) {
        cg_fail(c, TSL_ERR_SHAPE, "broadcast: dim %d from rank %d to rank %d", dim, tx->rank, td->rank);
        return;
    }
    int64_t *src = malloc(sizeof *src * (size_t)(td->ns + 1));
    if (!src) {
        cg_fail(c, TSL_ERR_NOMEM, "out of memory");
        return;
    }
    for (int64_t k = 0; k < td->ns; k++) {
        src[k] = -1;
        const int32_t *cc = &td->coord[k * td->rank];
        if (cc[0] < 0) continue;
        int64_t xc[DIST_MAX_RANK], ot, ol;
        int lead = tx->lay->rank - tx->rank, r = lead;
        for (int i = 0; i < lead; i++) xc[i] = 0;
        for (int i = 0; i < td->rank; i++)
            if (i != dim) xc[r++] = cc[i];
            else if (tx->rank == td->rank) xc[r++] = 0;
        if (!dist_layout_owner(tx->lay, xc, &ot, &ol)) src[k] = ot * tx->nlocals + ol;
    }
    const char *tb = emit_i32_table(c, "broadcast: source slot of each result slot, -1 none", src, td->ns);
    free(src);
    need_scratch(c, td->ns * reg_size(d->type.dt) + 64);
    const char *ct = reg_ctype(d->type.dt);
    L(c, "%s *const tmp = (%s *)scratch;", ct, ct);
    L(c, "for (int64_t k = 0; k < %lld; k++)", (long long)td->ns);
    L(c, "    tmp[k] = %s[k] < 0 ? %s : %s;", tb, rnd(c, d->type.dt, "NAN"),
      rnd(c, d->type.dt, arena_printf(c->ar, "(double)%s[%s[k]]", rname(c, x), tb)));
    L(c, "memcpy(%s, tmp, %lld);", rname(c, d), (long long)(td->ns * reg_size(d->type.dt)));
}

/* shuffle.{xor,up,down,idx} x, k: per warp; out of range keeps its own. */
static void emit_shuffle(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *x = reg_arg(c, &in->args[0]), *d = x ? reg_dst(c, s) : NULL;
    if (!d) return;
    if (!in->args[1].scalar) {
        cg_fail(c, TSL_ERR_SEMANTIC, "shuffle needs a lane operand");
        return;
    }
    const cgc_tab *tx = &c->tabv[rt(c, x)], *td = &c->tabv[rt(c, d)];
    if (tx->nthreads != td->nthreads || tx->nlocals != td->nlocals) {
        cg_fail(c, TSL_ERR_SHAPE, "shuffle: the result must be laid out like the input");
        return;
    }
    const char *k = tmp_int(c, in->args[1].scalar);
    const char *from = in->op == TILE_I_SHUFFLE_XOR ? "lane ^ %s" : in->op == TILE_I_SHUFFLE_UP ? "lane - %s"
                       : in->op == TILE_I_SHUFFLE_DOWN ? "lane + %s" : "%s";
    need_scratch(c, tx->ns * reg_size(x->type.dt) + 64);
    const char *ct = reg_ctype(x->type.dt);
    L(c, "%s *const tmp = (%s *)scratch;", ct, ct);
    L(c, "for (int64_t th = 0; th < %lld; th++) {", (long long)tx->nthreads);
    c->ind++;
    L(c, "const int64_t lane = th %% 32, base = th - lane;");
    L(c, "int64_t from = %s;", arena_printf(c->ar, from, k));
    L(c, "if (from < 0 || from > 31 || base + from >= %lld) from = lane;", (long long)tx->nthreads);
    L(c, "for (int64_t l = 0; l < %lld; l++) tmp[th * %lld + l] = %s[(base + from) * %lld + l];",
      (long long)tx->nlocals, (long long)tx->nlocals, rname(c, x), (long long)tx->nlocals);
    c->ind--;
    L(c, "}");
    L(c, "memcpy(%s, tmp, %lld);", rname(c, d), (long long)(tx->ns * reg_size(x->type.dt)));
}

/* mma d = a . b + c over m16n8k16 atoms: each operand's layout is R . F
 * (F the atom's fragment); warp w computes the C tiles R_C gives it from
 * the A and B tiles it holds (interp exec_mma). */
static const char *const cgc_frag[3] = {"column_local(2,2).spatial(8,4).local(1,2)",
                                        "local(2,1).column_spatial(4,8).local(2,1)",
                                        "local(2,1).spatial(8,4).local(1,2)"};

static int mma_split(cgc *c, const tile_value *t, int which, dist_layout *r)
{
    layout_value fv;
    layout_err le = {{0}, 0};
    const char *ft = cgc_frag[which];
    if (layout_parse(ft, strlen(ft), &fv, &le) || fv.kind != LAYOUT_VALUE_DIST) {
        cg_fail(c, TSL_ERR_INTERNAL, "mma fragment layout '%s': %s", ft, le.msg);
        return 0;
    }
    const cgc_tab *tb = &c->tabv[rt(c, t)];
    if (tb->rank != 2 || tb->lay->rank != 2) {
        cg_fail(c, TSL_ERR_SHAPE, "mma: '%s' must be a rank-2 register tensor", t->name);
        return 0;
    }
    if (dist_layout_divide(r, tb->lay, &fv.dist, &le)) {
        cg_fail(c, TSL_ERR_SHAPE, "mma m16n8k16: %s operand '%s' has layout %s, which is not R.%s: %s",
                which == 0 ? "A" : which == 1 ? "B" : "C", t->name, tb->text, ft, le.msg);
        return 0;
    }
    return 1;
}

static int64_t warp_tile(const dist_layout *r, int64_t w, int64_t i, int64_t j)
{
    int64_t cc[2] = {i, j}, th[64], lo[64];
    int64_t n = dist_layout_owners(r, cc, th, lo, 64);
    for (int64_t x = 0; x < n && x < 64; x++)
        if (th[x] == w) return lo[x];
    return -1;
}

static void emit_mma(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (in->atom && strcmp(in->atom, "m16n8k16") && strcmp(in->atom, "mma.m16n8k16") &&
        !strstr(in->atom, "m16n8k16")) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "mma atom '%s': the C generator knows m16n8k16", in->atom);
        return;
    }
    const tile_value *a = reg_arg(c, &in->args[0]), *b = a ? reg_arg(c, &in->args[1]) : NULL,
                     *cc = b ? reg_arg(c, &in->args[2]) : NULL, *d = cc ? reg_dst(c, s) : NULL;
    if (!d) return;
    const cgc_tab *ta = &c->tabv[rt(c, a)], *tb = &c->tabv[rt(c, b)], *tc = &c->tabv[rt(c, cc)],
                  *td = &c->tabv[rt(c, d)];
    if (ta->rank != 2 || tb->rank != 2 || tc->rank != 2 || ta->dims[1] != tb->dims[0] ||
        ta->dims[0] != tc->dims[0] || tb->dims[1] != tc->dims[1]) {
        cg_fail(c, TSL_ERR_SHAPE, "mma: shapes do not agree");
        return;
    }
    if (!is_fltreg(a->type.dt) || !is_fltreg(b->type.dt) || !is_fltreg(cc->type.dt) ||
        !is_fltreg(d->type.dt)) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "mma: operands must be f16, bf16 or f32 here");
        return;
    }
    dist_layout ra, rb, rc;
    if (!mma_split(c, a, 0, &ra) || !mma_split(c, b, 1, &rb) || !mma_split(c, cc, 2, &rc)) return;
    if (d != cc && !dist_layout_equal(td->lay, tc->lay)) {
        cg_fail(c, TSL_ERR_SHAPE, "mma: the destination's layout differs from C's");
        return;
    }
    int64_t kt = ra.shape[1], nct = 0;
    int64_t *ctile = malloc(sizeof(int64_t) * (size_t)(2 * rc.threads * rc.locals + 2));
    int64_t *ab = malloc(sizeof(int64_t) * (size_t)(2 * rc.threads * rc.locals * (kt ? kt : 1) + 2));
    if (!ctile || !ab) {
        free(ctile);
        free(ab);
        cg_fail(c, TSL_ERR_NOMEM, "out of memory");
        return;
    }
    for (int64_t w = 0; w < rc.threads && !c->st; w++)
        for (int64_t ct = 0; ct < rc.locals && !c->st; ct++) {
            int64_t tcd[2];
            if (dist_layout_map(&rc, w, ct, tcd)) continue;
            for (int64_t k = 0; k < kt; k++) {
                int64_t at = warp_tile(&ra, w, tcd[0], k), bt = warp_tile(&rb, w, k, tcd[1]);
                if (at < 0 || bt < 0) {
                    cg_fail(c, TSL_ERR_SHAPE,
                            "mma: warp %lld computes C tile (%lld,%lld) but does not hold %s tile (%lld,%lld)",
                            (long long)w, (long long)tcd[0], (long long)tcd[1], at < 0 ? "A" : "B",
                            (long long)(at < 0 ? tcd[0] : k), (long long)(at < 0 ? k : tcd[1]));
                    break;
                }
                ab[2 * (nct * kt + k)] = at;
                ab[2 * (nct * kt + k) + 1] = bt;
            }
            ctile[2 * nct] = w;
            ctile[2 * nct + 1] = ct;
            nct++;
        }
    if (c->st) {
        free(ctile);
        free(ab);
        return;
    }
    const char *tcn = emit_i32_table(c, "mma: (warp, C tile slot) per C tile", ctile, 2 * nct);
    const char *tab = emit_i32_table(c, "mma: (A tile slot, B tile slot) per C tile and k step", ab, 2 * nct * kt);
    free(ctile);
    free(ab);
    need_scratch(c, tc->ns * 4 + 64);
    L(c, "float *const res = (float *)scratch;");
    L(c, "memcpy(res, %s, %lld);", rname(c, cc), (long long)(tc->ns * 4));
    L(c, "for (int64_t e = 0; e < %lld; e++) {", (long long)nct);
    c->ind++;
    L(c, "const int64_t w = %s[2 * e], ct = %s[2 * e + 1];", tcn, tcn);
    L(c, "float fc[32][4];");
    L(c, "for (int l = 0; l < 32; l++)");
    L(c, "    for (int i = 0; i < 4; i++) fc[l][i] = res[(w * 32 + l) * %lld + ct * 4 + i];",
      (long long)tc->nlocals);
    L(c, "for (int64_t k = 0; k < %lld; k++)", (long long)kt);
    L(c, "    tsl_mma16816(%s, %lld, %s[2 * (e * %lld + k)], %s, %lld, %s[2 * (e * %lld + k) + 1], w, fc);",
      rname(c, a), (long long)ta->nlocals, tab, (long long)kt, rname(c, b), (long long)tb->nlocals, tab,
      (long long)kt);
    L(c, "for (int l = 0; l < 32; l++)");
    L(c, "    for (int i = 0; i < 4; i++) res[(w * 32 + l) * %lld + ct * 4 + i] = %s;", (long long)tc->nlocals,
      rnd(c, d->type.dt, "fc[l][i]"));
    c->ind--;
    L(c, "}");
    L(c, "memcpy(%s, res, %lld);", rname(c, d), (long long)(tc->ns * 4));
}

static void emit_print(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_operand *o = &in->args[0];
    if (!o->v) {
        L(c, "printf(\"block (%%lld,%%lld,%%lld): %%g\\n\", (long long)bx, (long long)by, (long long)bz, %s);",
          cnum(c, o->scalar));
        return;
    }
    if (o->v->kind == TILE_V_SCALAR) {
        L(c, "printf(\"block (%%lld,%%lld,%%lld): %s = %%lld\\n\", (long long)bx, (long long)by, (long long)bz, "
             "(long long)v%d);", o->v->name, o->v->id);
        return;
    }
    const tile_value *x = reg_arg(c, o);
    if (!x) return;
    const cgc_tab *tb = &c->tabv[rt(c, x)];
    const char *tc = tab_coord(c, rt(c, x));
    L(c, "printf(\"block (%%lld,%%lld,%%lld): %s (thread, local) -> [coord] value\\n\", (long long)bx, "
         "(long long)by, (long long)bz);", x->name);
    L(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    L(c, "if (%s[i][0] < 0) continue;", tc);
    strbuf fmt = {0}, args = {0};
    for (int i = 0; i < tb->rank; i++) {
        sb_printf(&fmt, "%s%%d", i ? "," : "");
        sb_printf(&args, ", %s[i][%d]", tc, i);
    }
    L(c, "printf(\"  (%%lld,%%lld) -> [%s] %%g\\n\", (long long)(i / %lld), (long long)(i %% %lld)%s, (double)%s[i]);",
      sb_str(&fmt), (long long)tb->nlocals, (long long)tb->nlocals, sb_str(&args), rname(c, x));
    sb_free(&fmt);
    sb_free(&args);
    c->ind--;
    L(c, "}");
}

static void emit_nothing(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    /* wait's count is evaluated as the interpreter does (errors show) */
    if (in->op == TILE_I_WAIT && in->nargs && in->args[0].scalar) L(c, "(void)%s;", cx(c, in->args[0].scalar));
    L(c, "/* no-op on the CPU: the block's threads run in program order */");
}

/* ---- decompositions -------------------------------------------------------------------------
 * The body runs once per thread (thread_idx = tid, `indices` from a
 * table); each ldmatrix.x4 atom records that thread's 8 source
 * coordinates; then the atoms run warp by warp (interp exec_decomp). */

typedef struct cgc_atom {
    const tile_stmt *s;
    int id;
    int64_t dslot[8]; /* destination slot of each of the 8 received elements */
    cgc_view view;
    const tile_value *dst;
} cgc_atom;

typedef struct cgc_decomp {
    cgc_atom atoms[16];
    int n;
} cgc_decomp;

static void emit_stmts(cgc *c, const tile_block *b);
static void emit_decomp_block(cgc *c, cgc_decomp *dc, const tile_block *b);
static const char *next_line(cgc *c);

/* `let a, b, i = indices g` (interp exec_indices) as a table per thread. */
static void emit_indices(cgc *c, const tile_stmt *s)
{
    if (!c->in_decomp) {
        cg_fail(c, TSL_ERR_SEMANTIC, "indices: only inside a decomposition");
        return;
    }
    const tile_threads *g = &s->group->threads;
    int nt = c->k->threads, no = g->nouter ? g->nouter : 1;
    if (s->nvs != 1 && s->nvs != no + 1) {
        cg_fail(c, TSL_ERR_SHAPE, "indices of '%s' give %d values, %d names", s->group->name, no + 1, s->nvs);
        return;
    }
    int64_t *tab = calloc((size_t)nt * (size_t)(no + 1) + 1, sizeof *tab);
    if (!tab) {
        cg_fail(c, TSL_ERR_NOMEM, "out of memory");
        return;
    }
    layout comp;
    int tiled = g->tiler && g->tiler->v.kind == LAYOUT_VALUE_DATA;
    int64_t inner = g->inner > 0 ? g->inner : 1;
    if (tiled) {
        layout_err le = {{0}, 0};
        if (layout_complement(&comp, &g->tiler->v.data, g->total, &le)) {
            cg_fail(c, TSL_ERR_SEMANTIC, "thread tile: %s", le.msg);
            free(tab);
            return;
        }
    }
    for (int th = 0; th < nt && !c->st; th++) {
        int64_t t = th % (g->total > 0 ? g->total : 1), grp = 0, idx = 0;
        if (tiled) {
            int found = 0;
            for (int64_t j = 0; j < g->total / inner && !found; j++)
                for (int64_t i = 0; i < inner && !found; i++)
                    if (layout_eval(&comp, j) + layout_eval(&g->tiler->v.data, i) == t) {
                        grp = j;
                        idx = i;
                        found = 1;
                    }
            if (!found) cg_fail(c, TSL_ERR_SEMANTIC, "thread %lld is in no group", (long long)t);
        } else {
            grp = t / inner;
            idx = t % inner;
        }
        int64_t *row = &tab[th * (no + 1)];
        if (!g->nouter) {
            row[0] = grp;
        } else {
            int64_t r = grp;
            for (int i = no - 1; i >= 0; i--) {
                row[i] = r % g->outer[i];
                r /= g->outer[i];
            }
        }
        row[no] = idx;
    }
    if (c->st) {
        free(tab);
        return;
    }
    const char *tn = emit_i32_table(c, arena_printf(c->ar, "indices %s: (outer..., index) per thread", s->group->name),
                                    tab, (int64_t)nt * (no + 1));
    free(tab);
    if (s->nvs == 1) {
        L(c, "v%d = %s[tid * %d + %d];", s->vs[0]->id, tn, no + 1, no);
        return;
    }
    for (int i = 0; i <= no; i++) L(c, "v%d = %s[tid * %d + %d];", s->vs[i]->id, tn, no + 1, i);
}

/* Slot of local coordinate lc (row-major over the local shape), -1 outside. */
static int64_t local_slot(const dist_layout *l, const int64_t *lc)
{
    int64_t ld[DIST_MAX_RANK], slot = 0;
    local_shape(l, ld);
    for (int i = 0; i < l->rank; i++) {
        if (lc[i] < 0 || lc[i] >= ld[i]) return -1;
        slot = slot * ld[i] + lc[i];
    }
    return slot;
}

/* C expression of the slot of local view coordinates cs (bounds-checked:
 * emits the check, returning a run-time error). */
static char *local_elem(cgc *c, const cgc_view *vw, char **cs)
{
    strbuf cond = {0}, slot = {0};
    for (int i = 0; i < vw->rank; i++) {
        sb_printf(&cond, "%s(uint64_t)%s >= %lldu", i ? " || " : "", cs[i], (long long)vw->dims[i]);
        int64_t rest = 1;
        for (int j = i + 1; j < vw->rank; j++) rest *= vw->dims[j];
        sb_printf(&slot, "%s%s * %lld", i ? " + " : "", cs[i], (long long)rest);
    }
    int id = cg_err(c, TSL_ERR_BOUNDS, "outside %s.local", vw->v->name);
    L(c, "if (%s) return %d;", sb_str(&cond), id);
    char *r = arena_printf(c->ar, "%s[tid * %lld + %s]", rname(c, vw->v), (long long)c->tabv[rt(c, vw->v)].nlocals,
                           sb_str(&slot));
    sb_free(&cond);
    sb_free(&slot);
    return r;
}

/* Slot of element i (register i/2, half i%2) of an ldmatrix destination
 * `R.local` or `R.local.tile([a, b])` (interp ldmatrix_slot); -1 when it
 * does not fit. The same for every thread. */
static int64_t ldmatrix_slot(const dist_layout *l, const tile_operand *dop, int i)
{
    int64_t ld[DIST_MAX_RANK], lc[DIST_MAX_RANK], sz[DIST_MAX_RANK], outer[DIST_MAX_RANK];
    int r = l->rank;
    local_shape(l, ld);
    int64_t m = i / 2, e = i % 2;
    if (dop->nsteps == 1) {
        int64_t x = i;
        for (int k = r - 1; k >= 0; k--) {
            lc[k] = x % ld[k];
            x /= ld[k];
        }
        return x ? -1 : local_slot(l, lc);
    }
    const tile_step *st = &dop->steps[1];
    for (int k = 0; k < r; k++) {
        int j = k - (r - st->n);
        sz[k] = j >= 0 ? st->sizes[j] : 1;
        if (sz[k] < 1 || ld[k] % sz[k]) return -1;
        outer[k] = ld[k] / sz[k];
    }
    for (int k = r - 1; k >= 0; k--) {
        lc[k] = (m % outer[k]) * sz[k] + e % sz[k];
        m /= outer[k];
        e /= sz[k];
    }
    return m || e ? -1 : local_slot(l, lc);
}

/* Record one thread's part of an ldmatrix.x4: its row of 8 (rank-2 shared
 * view [1, 8]); the destination `R.local[.tile(..)]` gives the 8 slots. */
static void record_ldmatrix(cgc *c, cgc_decomp *dc, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    cgc_atom *a = NULL;
    if (strncmp(in->atom, "ldmatrix.x4", 11)) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "atom %s: the C generator knows ldmatrix.x4[.trans]", in->atom);
        return;
    }
    for (int i = 0; i < dc->n; i++)
        if (dc->atoms[i].s == s) a = &dc->atoms[i];
    if (!a) {
        if (dc->n == 16) {
            cg_fail(c, TSL_ERR_UNAVAILABLE, "too many atoms in one decomposition");
            return;
        }
        a = &dc->atoms[dc->n];
        a->s = s;
        a->id = dc->n++;
    }
    const tile_operand *dop = in->has_dst ? &in->dst : NULL;
    if (!dop || !dop->v || dop->nsteps < 1 || dop->nsteps > 2 || dop->steps[0].kind != TILE_STEP_LOCAL ||
        (dop->nsteps == 2 && dop->steps[1].kind != TILE_STEP_TILE)) {
        cg_fail(c, TSL_ERR_SEMANTIC,
                "ldmatrix atom: write '-> R.local' or '-> R.local.tile([..])' (the thread's registers)");
        return;
    }
    const tile_value *d = dop->v;
    if (d->type.space != TILE_REGISTER || rt(c, d) < 0 || c->tabv[rt(c, d)].nlocals != 8 ||
        d->type.dt.bits != 16) {
        cg_fail(c, TSL_ERR_SHAPE, "ldmatrix.x4: '%s' must be a 16-bit register tensor with 8 slots per thread",
                d->name);
        return;
    }
    a->dst = d;
    for (int i = 0; i < 8; i++) {
        a->dslot[i] = ldmatrix_slot(c->tabv[rt(c, d)].lay, dop, i);
        if (a->dslot[i] < 0 || a->dslot[i] >= 8) {
            cg_fail(c, TSL_ERR_SHAPE, "ldmatrix.x4: register %d of the destination is not in '%s.local'", i / 2,
                    d->name);
            return;
        }
    }
    if (!view_of(c, &in->args[0], &a->view)) return;
    const cgc_view *vw = &a->view;
    if (vw->local || vw->v->type.space != TILE_SHARED || vw->rank != 2 || vw->v->type.dt.bits != 16) {
        cg_fail(c, TSL_ERR_SHAPE, "ldmatrix.x4 reads a 16-bit rank-2 shared tile");
        return;
    }
    if (vw->ext[0] > 1 || (vw->ext[1] >= 0 && vw->ext[1] != 8)) {
        cg_fail(c, TSL_ERR_SHAPE, "ldmatrix.x4: each thread supplies one row of 8 elements");
        return;
    }
    L(c, "for (int64_t j = 0; j < 8; j++) {");
    L(c, "    rec%d[tid * 16 + 2 * j] = %s;", a->id, view_map(c, vw, 0, "(int64_t)0"));
    L(c, "    rec%d[tid * 16 + 2 * j + 1] = %s;", a->id, view_map(c, vw, 1, "j"));
    L(c, "}");
    L(c, "rec%d_ok = 1;", a->id);
}

/* A move inside a decomposition that is not a collective atom: this
 * thread's elements one by one, the k-th of the source box (row-major)
 * to the k-th of the destination box, through double (interp
 * exec_thread_move). */
static void emit_thread_move(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (!in->has_dst || in->nargs < 1 || !in->args[0].v) {
        cg_fail(c, TSL_ERR_UNAVAILABLE, "inside a decomposition only moves 'op SRC -> DST' (and ldmatrix) run");
        return;
    }
    cgc_view a, b;
    if (!view_of(c, &in->args[0], &a) || !view_of(c, &in->dst, &b)) return;
    int64_t na = 1, nb = 1, ea[CGC_MAX_RANK], eb[CGC_MAX_RANK];
    for (int i = 0; i < a.rank; i++) {
        int j = i - (a.rank - b.rank);
        ea[i] = a.ext[i] >= 0 ? a.ext[i] : j >= 0 && b.ext[j] >= 0 ? b.ext[j] : 1;
        na *= ea[i];
    }
    for (int i = 0; i < b.rank; i++) {
        int j = i - (b.rank - a.rank);
        eb[i] = b.ext[i] >= 0 ? b.ext[i] : j >= 0 ? ea[j] : 1;
        nb *= eb[i];
    }
    if (na != nb) {
        cg_fail(c, TSL_ERR_SHAPE, "this thread moves %lld elements of '%s' into %lld of '%s'", (long long)na,
                a.v->name, (long long)nb, b.v->name);
        return;
    }
    const cgc_view *vs[2] = {&a, &b};
    const int64_t *es[2] = {ea, eb};
    for (int side = 0; side < 2; side++)
        if (vs[side]->local && c->tabv[rt(c, vs[side]->v)].nthreads < c->k->threads) {
            int id = cg_err(c, TSL_ERR_BOUNDS, "outside %s.local", vs[side]->v->name);
            L(c, "if (tid >= %lld) return %d;", (long long)c->tabv[rt(c, vs[side]->v)].nthreads, id);
        }
    L(c, "for (int64_t k = 0; k < %lld; k++) {", (long long)na);
    c->ind++;
    L(c, "double v;");
    for (int side = 0; side < 2; side++) {
        const cgc_view *vw = vs[side];
        char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
        int64_t div = 1;
        for (int i = vw->rank - 1; i >= 0; i--) {
            cs[i] = arena_printf(c->ar, "%c%d", side ? 'b' : 'a', i);
            char *vc = arena_printf(c->ar, "(k / %lld %% %lld)", (long long)div, (long long)es[side][i]);
            L(c, "const int64_t %s = %s;", cs[i], view_map(c, vw, i, vc));
            div *= es[side][i];
        }
        tile_dtype dt = vw->v->type.dt;
        if (vw->local) {
            char *e = local_elem(c, vw, cs);
            if (!side) L(c, "v = (double)%s;", e);
            else L(c, "%s = %s;", e, rnd(c, dt, "v"));
        } else if (vw->v->type.space == TILE_SHARED) {
            char *e = shared_elem(c, vw, cs, side);
            if (!side) L(c, "v = %s;", mem_to_dbl(c, dt, e));
            else L(c, "%s = %s;", e, dbl_to_mem(c, dt, "v"));
        } else if (vw->v->type.space == TILE_GLOBAL) {
            if (!side)
                L(c, "v = (%s) ? %s : 0.0;", global_inb(c, vw, cs), mem_to_dbl(c, dt, global_elem(c, vw, cs)));
            else
                L(c, "if (%s) %s = %s;", global_inb(c, vw, cs), global_elem(c, vw, cs), dbl_to_mem(c, dt, "v"));
        } else {
            cg_fail(c, TSL_ERR_SEMANTIC, "a register tensor inside a decomposition is used as '%s.local'",
                    vw->v->name);
        }
    }
    c->ind--;
    L(c, "}");
}

static void emit_decomp_stmt(cgc *c, cgc_decomp *dc, const tile_stmt *s)
{
    const char *saved = c->text;
    c->text = next_line(c);
    L(c, "/* %s */", c->text);
    switch (s->kind) {
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET: L(c, "v%d = %s;", s->v->id, cx(c, s->e)); break;
    case TILE_S_THREADS: break;
    case TILE_S_INDICES: emit_indices(c, s); break;
    case TILE_S_IF:
        L(c, "if (%s) {", cx(c, s->e));
        c->ind++;
        emit_decomp_block(c, dc, s->body);
        c->ind--;
        if (s->els) {
            L(c, "} else {");
            c->ind++;
            emit_decomp_block(c, dc, s->els);
            c->ind--;
        }
        L(c, "}");
        break;
    case TILE_S_INSTR: {
        const tile_instr *in = &s->instr;
        if (in->decomp) emit_decomp_block(c, dc, in->decomp);
        else if (in->op == TILE_I_LOAD_SHARED && in->atom && !strncmp(in->atom, "ldmatrix", 8))
            record_ldmatrix(c, dc, s);
        else if (in->op == TILE_I_LOAD_GLOBAL || in->op == TILE_I_STORE_GLOBAL || in->op == TILE_I_LOAD_SHARED ||
                 in->op == TILE_I_STORE_SHARED || in->op == TILE_I_COPY_ASYNC || in->op == TILE_I_COPY)
            emit_thread_move(c, s);
        else if (in->op == TILE_I_COMMIT || in->op == TILE_I_WAIT || in->op == TILE_I_SYNC)
            cg_fail(c, TSL_ERR_UNAVAILABLE, "%s inside a decomposition: put it outside", tile_op_info_of(in->op)->name);
        else
            cg_fail(c, TSL_ERR_UNAVAILABLE, "%s%s%s: not an atom the C generator knows inside a decomposition",
                    tile_op_info_of(in->op)->name, in->atom ? " atom " : "", in->atom ? in->atom : "");
        break;
    }
    default:
        cg_fail(c, TSL_ERR_UNAVAILABLE, "only let/indices/if and atoms run inside a decomposition");
    }
    div_check(c);
    c->text = saved;
}

static void emit_decomp_block(cgc *c, cgc_decomp *dc, const tile_block *b)
{
    for (int i = 0; i < b->n && !c->st; i++) emit_decomp_stmt(c, dc, b->items[i]);
}

static void emit_decomp(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *r = in->result;
    int nt = c->k->threads;
    if (r && r->type.space == TILE_REGISTER)
        L(c, "for (int64_t i = 0; i < %lld; i++) %s[i] = %s;", (long long)c->tabv[rt(c, r)].ns, rname(c, r),
          pad_value(r->type.dt));
    /* the per-thread body goes into its own buffer: the record arrays it
     * uses are declared before it once the atoms are known */
    strbuf outer = c->body;
    memset(&c->body, 0, sizeof c->body);
    int ind = c->ind;
    c->ind = 1;
    cgc_decomp dc;
    memset(&dc, 0, sizeof dc);
    c->in_decomp++;
    emit_decomp_block(c, &dc, in->decomp);
    c->in_decomp--;
    strbuf inner = c->body;
    c->body = outer;
    c->ind = ind;
    if (c->st) {
        sb_free(&inner);
        return;
    }
    need_scratch(c, (int64_t)dc.n * nt * 16 * 8 + 64);
    for (int i = 0; i < dc.n; i++) {
        L(c, "int64_t *const rec%d = (int64_t *)scratch + %lld;", i, (long long)i * nt * 16);
        L(c, "int rec%d_ok = 0;", i);
        L(c, "memset(rec%d, 0, %lld);", i, (long long)nt * 16 * 8);
    }
    L(c, "for (int64_t tid = 0; tid < %d; tid++) {", nt);
    const char *p = sb_str(&inner);
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        for (int i = 0; i < c->ind; i++) sb_puts(&c->body, "    ");
        sb_putn(&c->body, p, n);
        sb_putc(&c->body, '\n');
        p += n + (e ? 1 : 0);
    }
    sb_free(&inner);
    L(c, "}");
    for (int i = 0; i < dc.n && !c->st; i++) {
        cgc_atom *a = &dc.atoms[i];
        const cgc_tab *td = &c->tabv[rt(c, a->dst)];
        int trans = strstr(a->s->instr.atom, "trans") != NULL;
        if (nt % 32) {
            cg_fail(c, TSL_ERR_SHAPE, "ldmatrix needs whole warps; the block has %d threads", nt);
            return;
        }
        L(c, "/* ldmatrix.x4%s, warp by warp: lane l receives (row, col) of matrix m */", trans ? ".trans" : "");
        L(c, "if (rec%d_ok)", i);
        L(c, "for (int64_t w = 0; w < %d && w * 32 < %lld; w++) {", nt / 32, (long long)td->nthreads);
        c->ind++;
        L(c, "double rows[32][8];");
        L(c, "for (int64_t l = 0; l < 32; l++)");
        L(c, "for (int64_t j = 0; j < 8; j++) {");
        c->ind++;
        L(c, "const int64_t ca = rec%d[(w * 32 + l) * 16 + 2 * j], cb = rec%d[(w * 32 + l) * 16 + 2 * j + 1];",
          i, i);
        char *cs[2] = {"ca", "cb"};
        char *e = shared_elem(c, &a->view, cs, 0);
        L(c, "rows[l][j] = %s;", mem_to_dbl(c, a->view.v->type.dt, e));
        c->ind--;
        L(c, "}");
        const char *ds = emit_i32_table(c, "ldmatrix: destination slot of received element 2m+e", a->dslot, 8);
        L(c, "for (int l = 0; l < 32; l++)");
        L(c, "    for (int m = 0; m < 4; m++)");
        L(c, "        for (int e = 0; e < 2; e++)");
        L(c, "            %s[(w * 32 + l) * 8 + %s[2 * m + e]] = %s;", rname(c, a->dst), ds,
          rnd(c, a->dst->type.dt,
              trans ? "rows[8 * m + 2 * (l % 4) + e][l / 4]" : "rows[8 * m + l / 4][2 * (l % 4) + e]"));
        c->ind--;
        L(c, "}");
    }
}

/* ---- statements ----------------------------------------------------------------------------- */

typedef void (*cgc_emit_fn)(cgc *c, const tile_stmt *s);

/* One emitter per opcode; NULL: not supported by the C generator. */
static const cgc_emit_fn cgc_emitters[TILE_I_COUNT] = {
    [TILE_I_ALLOC] = emit_alloc,
    [TILE_I_LOAD_GLOBAL] = emit_load,
    [TILE_I_STORE_GLOBAL] = emit_store,
    [TILE_I_LOAD_SHARED] = emit_load,
    [TILE_I_STORE_SHARED] = emit_store,
    [TILE_I_COPY_ASYNC] = emit_copy_async,
    [TILE_I_COMMIT] = emit_nothing,
    [TILE_I_WAIT] = emit_nothing,
    [TILE_I_SYNC] = emit_nothing,
    [TILE_I_MMA] = emit_mma,
    [TILE_I_CAST] = emit_elementwise,
    [TILE_I_VIEW] = emit_view,
    [TILE_I_COPY] = emit_elementwise,
    [TILE_I_NEG] = emit_elementwise,
    [TILE_I_ABS] = emit_elementwise,
    [TILE_I_EXP] = emit_elementwise,
    [TILE_I_LOG] = emit_elementwise,
    [TILE_I_SQRT] = emit_elementwise,
    [TILE_I_RSQRT] = emit_elementwise,
    [TILE_I_TANH] = emit_elementwise,
    [TILE_I_SIGMOID] = emit_elementwise,
    [TILE_I_RELU] = emit_elementwise,
    [TILE_I_ADD] = emit_elementwise,
    [TILE_I_SUB] = emit_elementwise,
    [TILE_I_MUL] = emit_elementwise,
    [TILE_I_DIV] = emit_elementwise,
    [TILE_I_MAX] = emit_elementwise,
    [TILE_I_MIN] = emit_elementwise,
    [TILE_I_REDUCE_SUM] = emit_reduce,
    [TILE_I_REDUCE_MAX] = emit_reduce,
    [TILE_I_REDUCE_MIN] = emit_reduce,
    [TILE_I_SHUFFLE_XOR] = emit_shuffle,
    [TILE_I_SHUFFLE_UP] = emit_shuffle,
    [TILE_I_SHUFFLE_DOWN] = emit_shuffle,
    [TILE_I_SHUFFLE_IDX] = emit_shuffle,
    [TILE_I_BROADCAST] = emit_broadcast,
    [TILE_I_PRINT] = emit_print,
    [TILE_I_IOTA] = emit_iota,
    [TILE_I_ERF] = emit_elementwise,
    [TILE_I_NOT] = emit_elementwise,
    [TILE_I_MOD] = emit_elementwise,
    [TILE_I_POW] = emit_elementwise,
    [TILE_I_AND] = emit_elementwise,
    [TILE_I_OR] = emit_elementwise,
    [TILE_I_LT] = emit_elementwise,
    [TILE_I_LE] = emit_elementwise,
    [TILE_I_GT] = emit_elementwise,
    [TILE_I_GE] = emit_elementwise,
    [TILE_I_EQ] = emit_elementwise,
    [TILE_I_NE] = emit_elementwise,
    [TILE_I_SELECT] = emit_elementwise,
    [TILE_I_GATHER] = emit_gather,
    [TILE_I_SCATTER] = emit_gather,
};

/* The printed text of the next statement (preorder), for comments. */
static const char *next_line(cgc *c)
{
    if (c->line_at < c->nlines) return c->lines[c->line_at++];
    return "?";
}

static void emit_stmt(cgc *c, const tile_stmt *s)
{
    const char *saved = c->text;
    c->text = next_line(c);
    L(c, "/* %s */", c->text);
    switch (s->kind) {
    case TILE_S_INSTR: {
        const tile_instr *in = &s->instr;
        L(c, "{");
        c->ind++;
        if (in->decomp) {
            emit_decomp(c, s);
        } else if ((unsigned)in->op < TILE_I_COUNT && cgc_emitters[in->op]) {
            cgc_emitters[in->op](c, s);
        } else {
            cg_fail(c, TSL_ERR_UNAVAILABLE, "the C generator cannot emit '%s'", tile_op_info_of(in->op)->name);
        }
        div_check(c);
        c->ind--;
        L(c, "}");
        break;
    }
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET:
        L(c, "v%d = %s;", s->v->id, cx(c, s->e));
        div_check(c);
        break;
    case TILE_S_THREADS: break;
    case TILE_S_INDICES: emit_indices(c, s); break;
    case TILE_S_FOR: {
        L(c, "{");
        c->ind++;
        L(c, "const int64_t lo = %s, hi = %s, step = %s;", cx(c, s->lo), cx(c, s->hi),
          s->step ? cx(c, s->step) : "1");
        div_check(c);
        int id = cg_err(c, TSL_ERR_RUNTIME, "for: the step is not positive");
        L(c, "if (step <= 0) return %d;", id);
        L(c, "for (v%d = lo; v%d < hi; v%d += step) {", s->v->id, s->v->id, s->v->id);
        c->ind++;
        emit_stmts(c, s->body);
        c->ind--;
        L(c, "}");
        c->ind--;
        L(c, "}");
        break;
    }
    case TILE_S_IF:
        L(c, "{");
        c->ind++;
        L(c, "const int64_t cond = %s;", cx(c, s->e));
        div_check(c);
        L(c, "if (cond) {");
        c->ind++;
        emit_stmts(c, s->body);
        c->ind--;
        if (s->els) {
            L(c, "} else {");
            c->ind++;
            emit_stmts(c, s->els);
            c->ind--;
        }
        L(c, "}");
        c->ind--;
        L(c, "}");
        break;
    case TILE_S_WHILE: {
        int id = cg_err(c, TSL_ERR_RUNTIME, "while: more than 2^32 iterations");
        L(c, "for (int64_t n = 0;; n++) {");
        c->ind++;
        L(c, "const int64_t cond = %s;", cx(c, s->e));
        div_check(c);
        L(c, "if (!cond) break;");
        L(c, "if (n > ((int64_t)1 << 32)) return %d;", id);
        emit_stmts(c, s->body);
        c->ind--;
        L(c, "}");
        break;
    }
    case TILE_S_PIPELINE:
        cg_fail(c, TSL_ERR_UNAVAILABLE, "pipeline: expand first (tile_pipeline_expand)");
        break;
    }
    c->text = saved;
}

static void emit_stmts(cgc *c, const tile_block *b)
{
    for (int i = 0; b && i < b->n && !c->st; i++) emit_stmt(c, b->items[i]);
}

/* ---- storage plan ------------------------------------------------------------------------------
 * Shared tensors at the interpreter's offsets (128-byte aligned, in
 * program order); every register value its own array. */

static void plan_block(cgc *c, const tile_block *b)
{
    for (int i = 0; b && i < b->n && !c->st; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR) {
            const tile_value *r = s->instr.result;
            if (r && r->type.space == TILE_SHARED && s->instr.op == TILE_I_ALLOC) {
                int64_t dims[CGC_MAX_RANK], n = 1;
                if (!cdims(c, r, dims)) return;
                if (!dt_ok(r->type.dt)) {
                    cg_fail(c, TSL_ERR_UNAVAILABLE, "shared tensor '%s': only byte-sized dtypes here", r->name);
                    return;
                }
                if (r->type.layout && r->type.layout->v.kind != LAYOUT_VALUE_DATA) {
                    cg_fail(c, TSL_ERR_SEMANTIC, "shared tensor '%s' needs a data layout", r->name);
                    return;
                }
                for (int j = 0; j < r->type.rank; j++) n *= dims[j];
                if (r->type.layout) {
                    int64_t co = layout_cosize(&r->type.layout->v.data);
                    if (co > n) n = co;
                }
                c->soff[r->id] = align_up(c->smem, 128);
                c->smem = c->soff[r->id] + n * (r->type.dt.bits / 8);
            }
            if (r && r->type.space == TILE_REGISTER && c->rtab[r->id] < 0) {
                if (!dt_ok(r->type.dt)) {
                    cg_fail(c, TSL_ERR_UNAVAILABLE, "register tensor '%s': only byte-sized dtypes here", r->name);
                    return;
                }
                int t = tab_of(c, &r->type, r->name);
                if (t < 0) return;
                c->rtab[r->id] = t;
                c->roff[r->id] = c->regs;
                c->regs = align_up(c->regs + c->tabv[t].ns * reg_size(r->type.dt), 64);
            }
            plan_block(c, s->instr.decomp);
        }
        if (s->kind == TILE_S_PIPELINE) {
            cg_fail(c, TSL_ERR_UNAVAILABLE, "pipeline: expand first (tile_pipeline_expand)");
            return;
        }
        plan_block(c, s->body);
        plan_block(c, s->els);
    }
}

static int has_pipeline(const tile_block *b)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_PIPELINE) return 1;
        if (has_pipeline(s->body) || has_pipeline(s->els)) return 1;
        if (s->kind == TILE_S_INSTR && has_pipeline(s->instr.decomp)) return 1;
    }
    return 0;
}

/* ---- the kernel ---------------------------------------------------------------------------------
 * Launch ABI between cg_c_run and the generated entry:
 *   P[p]  first element of tensor parameter p (NULL for scalars);
 *   I[]   int64 words: per tensor parameter rank dims then rank strides
 *         (elements), per scalar parameter its value, then the size
 *         symbols, then the grid extents (x, y, z). */

typedef struct cgc_result {
    char *source;
    cgc_err *errs;
    int nerrs;
} cgc_result;

const char *cg_c_entry_name(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "tsl_kernel_%s", name);
    for (char *p = buf + 11; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_') *p = '_';
    return buf;
}

static void split_lines(cgc *c)
{
    strbuf sb = {0};
    tile_print_kernel(&sb, c->k);
    char *text = arena_strdup(c->ar, sb_str(&sb));
    sb_free(&sb);
    char *p = strchr(text, '\n'); /* line 0 is the kernel header */
    while (p) {
        char *line = p + 1, *e = strchr(line, '\n');
        if (e) *e = 0;
        p = e;
        while (*line == ' ') line++;
        /* closing braces belong to no statement */
        if (*line && *line != '}') {
            for (char *q = line; *q; q++)
                if (q[0] == '*' && q[1] == '/') q[1] = ' '; /* keep the comment closed */
            ARENA_PUSH(c->ar, c->lines, c->nlines, c->caplines, line);
        }
    }
}

static tsl_status emit_kernel(const tile_kernel *k, tsl_arena *ar, tsl_diag *d, cgc_result *res)
{
    cgc C, *c = &C;
    memset(c, 0, sizeof *c);
    c->k = k;
    c->ar = ar;
    c->d = d;
    int nv = k->nvalues + 1;
    c->soff = arena_alloc(ar, sizeof(int64_t) * (size_t)nv);
    c->roff = arena_alloc(ar, sizeof(int64_t) * (size_t)nv);
    c->rtab = arena_alloc(ar, sizeof(int) * (size_t)nv);
    for (int i = 0; i < nv; i++) {
        c->soff[i] = -1;
        c->rtab[i] = -1;
    }
    if (k->threads < 1 || k->threads > 1024)
        cg_fail(c, TSL_ERR_SEMANTIC, "%d threads per block (1..1024)", k->threads);
    for (int p = 0; p < k->nparams && !c->st; p++) {
        const tile_value *v = k->params[p];
        if (v->kind == TILE_V_TENSOR && (!dt_ok(v->type.dt) || v->type.rank > CGC_MAX_RANK))
            cg_fail(c, TSL_ERR_UNAVAILABLE, "parameter '%s': only byte-sized dtypes and rank <= %d here",
                    v->name, CGC_MAX_RANK);
    }
    if (!c->st) plan_block(c, k->body);
    int64_t budget = k->smem_budget ? k->smem_budget : CGC_DEFAULT_SMEM;
    if (!c->st && c->smem > budget)
        cg_fail(c, TSL_ERR_SHAPE, "needs %lld bytes of shared memory; the budget is %lld bytes",
                (long long)c->smem, (long long)budget);
    split_lines(c);
    c->ind = 1;
    if (!c->st) emit_stmts(c, k->body);
    if (c->st) {
        sb_free(&c->body);
        sb_free(&c->tabs);
        return c->st;
    }
    emit_tables(c);

    strbuf out = {0};
    char entry[256];
    cg_c_entry_name(k->name, entry, sizeof entry);
    sb_printf(&out, "/* generated by tessel codegen/c from tile kernel '%s' (%d threads per block).\n"
                    " * One call of blk() runs one thread block; %s() runs blocks [begin, end). */\n",
              k->name, k->threads, entry);
    sb_puts(&out, cgc_prelude);
    sb_puts(&out, "\n");
    sb_puts(&out, sb_str(&c->tabs));
    int64_t sm = align_up(c->smem, 64), rg = align_up(c->regs, 64), ws = sm + rg + align_up(c->scratch, 64);
    sb_printf(&out, "\n/* workspace: shared memory [0, %lld), registers [%lld, %lld), scratch [%lld, %lld) */\n",
              (long long)sm, (long long)sm, (long long)(sm + rg), (long long)(sm + rg), (long long)ws);
    sb_puts(&out, "static int blk(void *const *P, const int64_t *I, int64_t bx, int64_t by, int64_t bz, "
                  "char *ws, int64_t *info)\n{\n");
    sb_puts(&out, "    int err = 0;\n    char *const scratch = ws + ");
    sb_printf(&out, "%lld;\n    (void)scratch;\n    (void)info;\n    (void)P;\n    (void)I;\n    (void)bx;\n    (void)by;\n"
                    "    (void)bz;\n    (void)err;\n", (long long)(sm + rg));
    int w = 0;
    for (int p = 0; p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        if (v->kind == TILE_V_TENSOR) {
            sb_printf(&out, "    %s *const g%d = (%s *)P[%d]; /* %s */\n", mem_ctype(v->type.dt), v->id,
                      mem_ctype(v->type.dt), p, v->name);
            sb_printf(&out, "    (void)g%d;\n", v->id);
            for (int i = 0; i < v->type.rank; i++)
                sb_printf(&out, "    const int64_t g%d_d%d = I[%d];\n    (void)g%d_d%d;\n", v->id, i, w++, v->id, i);
            for (int i = 0; i < v->type.rank; i++)
                sb_printf(&out, "    const int64_t g%d_s%d = I[%d];\n    (void)g%d_s%d;\n", v->id, i, w++, v->id, i);
        } else {
            w++;
        }
    }
    for (int i = 0; i < k->nvalues; i++) {
        const tile_value *v = k->values[i];
        if (!v || v->kind != TILE_V_SCALAR) continue;
        int init = -1;
        if (v->origin == TILE_O_PARAM) {
            int ww = 0;
            for (int p = 0; p < k->nparams; p++) {
                if (k->params[p] == v) init = ww;
                ww += k->params[p]->kind == TILE_V_TENSOR ? 2 * k->params[p]->type.rank : 1;
            }
        }
        for (int s = 0; s < k->nsyms; s++)
            if (k->syms[s] == v) init = w + s;
        if (init >= 0 && tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT)
            sb_printf(&out, "    double v%d; /* %s */\n    memcpy(&v%d, &I[%d], 8);\n", v->id, v->name, v->id, init);
        else if (init >= 0) sb_printf(&out, "    int64_t v%d = I[%d]; /* %s */\n", v->id, init, v->name);
        else sb_printf(&out, "    int64_t v%d = 0; /* %s */\n", v->id, v->name);
        sb_printf(&out, "    (void)v%d;\n", v->id);
    }
    for (int i = 0; i < k->nvalues; i++) {
        const tile_value *v = k->values[i];
        if (!v || v->kind != TILE_V_TENSOR) continue;
        if (c->soff[v->id] >= 0)
            sb_printf(&out, "    %s *const s%d = (%s *)(ws + %lld); /* shared %s */\n    (void)s%d;\n",
                      mem_ctype(v->type.dt), v->id, mem_ctype(v->type.dt), (long long)c->soff[v->id], v->name,
                      v->id);
        if (c->rtab[v->id] >= 0)
            sb_printf(&out, "    %s *const r%d = (%s *)(ws + %lld); /* register %s: %s */\n    (void)r%d;\n",
                      reg_ctype(v->type.dt), v->id, reg_ctype(v->type.dt), (long long)(sm + c->roff[v->id]),
                      v->name, c->tabv[c->rtab[v->id]].text, v->id);
    }
    sb_puts(&out, sb_str(&c->body));
    sb_puts(&out, "    return 0;\n}\n\n");
    int gw = w + k->nsyms;
    sb_printf(&out,
              "/* Run blocks [begin, end) of the flattened grid (x fastest). Returns 0, -1 when\n"
              " * out of memory, or the error code of the first failing block (*fail: its index;\n"
              " * info[0..1]: the error's values). */\n"
              "int %s(void *const *P, const int64_t *I, int64_t begin, int64_t end, int64_t *fail, int64_t *info);\n"
              "int %s(void *const *P, const int64_t *I, int64_t begin, int64_t end, int64_t *fail, int64_t *info)\n"
              "{\n"
              "    const int64_t gx = I[%d], gy = I[%d];\n"
              "    char *ws = calloc(1, %lld);\n"
              "    if (!ws) return -1;\n"
              "    int rc = 0;\n"
              "    for (int64_t b = begin; b < end && !rc; b++) {\n"
              "        rc = blk(P, I, b %% gx, b / gx %% gy, b / (gx * gy), ws, info);\n"
              "        if (rc) *fail = b;\n"
              "    }\n"
              "    free(ws);\n"
              "    return rc;\n"
              "}\n",
              entry, entry, gw, gw + 1, (long long)(ws ? ws : 64));
    sb_free(&c->body);
    sb_free(&c->tabs);
    res->source = sb_take(&out);
    res->errs = c->errs;
    res->nerrs = c->nerrs;
    return TSL_OK;
}

/* Kernel k itself, or (when it has pipelines) its expansion in a copy of
 * the module parsed into `ar`. */
static tsl_status prepare(const tile_module *m, const tile_kernel *k, tsl_arena *ar, tsl_diag *d,
                          const tile_kernel **out)
{
    *out = k;
    if (!has_pipeline(k->body)) return TSL_OK;
    (void)m;
    strbuf sb = {0};
    tile_print_kernel(&sb, k);
    char *text = arena_strdup(ar, sb_str(&sb));
    sb_free(&sb);
    tsl_source src = {"<pipeline expansion>", text};
    tile_module *copy = NULL;
    tsl_status st = tile_parse(ar, &src, d, &copy);
    if (!st) st = tile_pipeline_expand(copy, &src, 0, d);
    if (st) return st;
    *out = copy->kernels[0];
    return TSL_OK;
}

tsl_status cg_c_emit(const tile_module *m, const tile_kernel *k, strbuf *out, tsl_diag *d)
{
    tsl_arena *ar = arena_create();
    const tile_kernel *kk;
    cgc_result res = {0};
    tsl_status st = prepare(m, k, ar, d, &kk);
    if (!st) st = emit_kernel(kk, ar, d, &res);
    if (!st) sb_puts(out, res.source);
    free(res.source);
    arena_free(ar);
    return st;
}

/* ---- running ------------------------------------------------------------------------------------- */

typedef int (*cgc_entry_fn)(void *const *P, const int64_t *I, int64_t begin, int64_t end, int64_t *fail,
                            int64_t *info);

typedef struct cgc_launch {
    cgc_entry_fn fn;
    void **P;
    int64_t *I;
    pthread_mutex_t mu;
    int rc;
    int64_t fail;
    int64_t info[2];
} cgc_launch;

static void run_range(void *ctx, int64_t begin, int64_t end)
{
    cgc_launch *l = ctx;
    int64_t fail = -1, info[2] = {0, 0};
    int rc = l->fn(l->P, l->I, begin, end, &fail, info);
    if (!rc) return;
    pthread_mutex_lock(&l->mu);
    if (!l->rc || (fail >= 0 && fail < l->fail)) {
        l->rc = rc;
        l->fail = fail;
        l->info[0] = info[0];
        l->info[1] = info[1];
    }
    pthread_mutex_unlock(&l->mu);
}

static const tile_interp_arg *find_arg(const tile_interp_arg *args, int nargs, const char *name)
{
    for (int i = 0; i < nargs; i++)
        if (args[i].name && !strcmp(args[i].name, name)) return &args[i];
    return NULL;
}

typedef struct cgc_scope {
    const tile_kernel *k;
    const int64_t *symv;
    const tile_interp_arg *args;
    int nargs;
} cgc_scope;

static int64_t scope_lookup(void *ctx, const tile_value *v, int *ok)
{
    const cgc_scope *s = ctx;
    for (int i = 0; i < s->k->nsyms; i++)
        if (s->k->syms[i] == v) return s->symv[i];
    if (v->origin == TILE_O_PARAM && v->kind == TILE_V_SCALAR) {
        const tile_interp_arg *a = find_arg(s->args, s->nargs, v->name);
        if (a) return a->ival;
    }
    *ok = 0;
    return 0;
}

/* Bind parameters into the launch words (interp bind_params' checks). */
static tsl_status bind(const tile_kernel *k, const tile_interp_arg *args, int nargs, const int64_t *symv,
                       void **P, int64_t *I, int64_t *nblocks, tsl_diag *d)
{
    cgc_scope sc = {k, symv, args, nargs};
    int w = 0;
    for (int p = 0; p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        const tile_interp_arg *a = find_arg(args, nargs, v->name);
        if (!a) {
            diag_error(d, TSL_ERR_ARG, "kernel '%s': parameter '%s' is not bound", k->name, v->name);
            return TSL_ERR_ARG;
        }
        if (v->kind == TILE_V_SCALAR) {
            P[p] = NULL;
            /* a float typed scalar's ival holds its double's bits (interp.h) */
            I[w++] = a->ival;
            continue;
        }
        const DLTensor *t = a->t;
        tsl_dtype dt, want;
        char nb[16];
        if (!t) {
            diag_error(d, TSL_ERR_ARG, "parameter '%s' needs a tensor", v->name);
            return TSL_ERR_ARG;
        }
        if (tsl_dtype_from_dlpack(t->dtype, &dt) || tile_dtype_to_tsl(v->type.dt, &want) || dt != want) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' should be %s", v->name, tile_dtype_name(v->type.dt, nb));
            return TSL_ERR_SHAPE;
        }
        if (t->device.device_type != kDLCPU) {
            diag_error(d, TSL_ERR_ARG, "tensor '%s' is not in host memory", v->name);
            return TSL_ERR_ARG;
        }
        if (t->ndim != v->type.rank) {
            diag_error(d, TSL_ERR_SHAPE, "tensor '%s' has rank %d; expected %d", v->name, t->ndim, v->type.rank);
            return TSL_ERR_SHAPE;
        }
        int64_t acc = 1, st[CGC_MAX_RANK];
        for (int i = t->ndim - 1; i >= 0; i--) {
            int ok = 1;
            int64_t want_d = tile_expr_eval(v->type.dims[i], scope_lookup, &sc, NULL, -1, &ok);
            if (!ok || t->shape[i] != want_d) {
                diag_error(d, TSL_ERR_SHAPE, "tensor '%s' dim %d is %lld; the kernel says %lld", v->name, i,
                           (long long)t->shape[i], (long long)want_d);
                return TSL_ERR_SHAPE;
            }
            st[i] = t->strides ? t->strides[i] : acc;
            acc *= t->shape[i];
        }
        P[p] = (char *)t->data + t->byte_offset;
        for (int i = 0; i < t->ndim; i++) I[w++] = t->shape[i];
        for (int i = 0; i < t->ndim; i++) I[w++] = st[i];
    }
    for (int s = 0; s < k->nsyms; s++) I[w++] = symv[s];
    *nblocks = 1;
    for (int i = 0; i < 3; i++) {
        int64_t g = 1;
        if (i < k->ngrid) {
            int ok = 1;
            g = tile_expr_eval(k->grid[i], scope_lookup, &sc, NULL, -1, &ok);
            if (!ok) {
                diag_error(d, TSL_ERR_RUNTIME, "kernel '%s': grid dim %d cannot be evaluated", k->name, i);
                return TSL_ERR_RUNTIME;
            }
            if (g < 0) g = 0;
        }
        I[w++] = g ? g : 1;
        *nblocks *= g;
    }
    return TSL_OK;
}

tsl_status cg_c_run(const tile_module *m, const tile_kernel *k, const tile_interp_arg *args, int nargs,
                    tsl_diag *d)
{
    tsl_arena *ar = arena_create();
    const tile_kernel *kk = NULL;
    cgc_result res = {0};
    rt_cpu_module *mod = NULL;
    int64_t *symv = calloc((size_t)k->nsyms + 1, sizeof *symv);
    int nwords = 3 + k->nsyms;
    for (int p = 0; p < k->nparams; p++)
        nwords += k->params[p]->kind == TILE_V_TENSOR ? 2 * k->params[p]->type.rank : 1;
    int64_t *I = calloc((size_t)nwords + 1, sizeof *I);
    void **P = calloc((size_t)k->nparams + 1, sizeof *P);
    int64_t nblocks = 0;
    tsl_status st = TSL_OK;
    if (!symv || !I || !P) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
        goto done;
    }
    if ((st = tile_interp_bind_symbols(k, args, nargs, NULL, NULL, 0, symv, d))) goto done;
    if ((st = bind(k, args, nargs, symv, P, I, &nblocks, d))) goto done;
    if ((st = prepare(m, k, ar, d, &kk))) goto done;
    if ((st = emit_kernel(kk, ar, d, &res))) goto done;
    char hint[300];
    snprintf(hint, sizeof hint, "%s.c", k->name);
    if ((st = rt_cpu_compile(res.source, hint, &mod, d))) goto done;
    char entry[256];
    cgc_launch l = {0};
    l.fn = (cgc_entry_fn)rt_cpu_symbol(mod, cg_c_entry_name(k->name, entry, sizeof entry), d);
    if (!l.fn) {
        st = TSL_ERR_RUNTIME;
        goto done;
    }
    if (nblocks <= 0) goto done;
    l.P = P;
    l.I = I;
    l.fail = INT64_MAX;
    pthread_mutex_init(&l.mu, NULL);
    rt_cpu_parallel_for(nblocks, run_range, &l);
    pthread_mutex_destroy(&l.mu);
    if (l.rc) {
        int64_t gx = I[nwords - 3], gy = I[nwords - 2], b = l.fail;
        if (l.rc < 0 || l.rc > res.nerrs) {
            diag_error(d, TSL_ERR_NOMEM, "kernel '%s': out of memory for a block's workspace", k->name);
            st = TSL_ERR_NOMEM;
        } else {
            const cgc_err *e = &res.errs[l.rc - 1];
            char msg[1024];
            if (e->info) {
                /* the message is ours: a format with two %lld for info[0..1] */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                snprintf(msg, sizeof msg, e->msg, (long long)l.info[0], (long long)l.info[1]);
#pragma GCC diagnostic pop
            } else {
                snprintf(msg, sizeof msg, "%s", e->msg);
            }
            diag_error(d, e->st, "kernel '%s': %s%s (block %lld,%lld,%lld)", k->name, msg, e->where, (long long)(b % gx),
                       (long long)(b / gx % gy), (long long)(b / (gx * gy)));
            st = e->st;
        }
    }
done:
    rt_cpu_module_free(mod);
    free(res.source);
    free(symv);
    free(I);
    free(P);
    arena_free(ar);
    return st;
}
