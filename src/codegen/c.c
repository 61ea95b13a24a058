/* c.c — tile IR -> C11 for the CPU: the kernel (prelude, tables, block
 * function, entry), statements, the storage plan. The instructions are
 * emitted by c_emit_ops.c and c_emit_decomp.c over the vocabulary of
 * c_emit_base.c; runtime/target_cpu.c runs the result.
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
 *     then rounding to the dtype; fma rounded once);
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
#include <string.h>

#include "base/fma16.h"
#include "base/lowbit_conv.h"
#include "codegen/c_int.h"
#include "runtime/runtime.h"
#include "tile/pipeline.h"

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
    "/* helpers a kernel may not use (no unused-function warnings) */\n"
    "#if defined(__GNUC__)\n"
    "#define TSL_HELPER static inline __attribute__((unused))\n"
    "#else\n"
    "#define TSL_HELPER static inline\n"
    "#endif\n"
    "/* a loop over the slots of one instruction: iteration i touches slot i only */\n"
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#define TSL_IVDEP _Pragma(\"GCC ivdep\")\n"
    "#else\n"
    "#define TSL_IVDEP\n"
    "#endif\n"
    "#if defined(__GNUC__)\n"
    "#define TSL_PREFETCH(p) __builtin_prefetch(p)\n"
    "#else\n"
    "#define TSL_PREFETCH(p) ((void)(p))\n"
    "#endif\n"
    "\n"
    "/* f32 -> f16 bits, round to nearest even (overflow to inf, NaN kept quiet);\n"
    " * branch-free, so loops of it vectorize: |f| + 2^(max(e, -14) + 13) keeps\n"
    " * exactly float16's bits of |f| (e its exponent), rounded by the addition */\n"
    "TSL_HELPER uint16_t tsl_f2h(float f)\n"
    "{\n"
    "    uint32_t x, s, a, rb;\n"
    "    memcpy(&x, &f, 4);\n"
    "    s = (x >> 16) & 0x8000u;\n"
    "    a = x & 0x7fffffffu;\n"
    "    int32_t e = (int32_t)(a >> 23) - 127;\n"
    "    e = e < -14 ? -14 : e > 15 ? 15 : e;\n"
    "    uint32_t mb = (uint32_t)(e + 140) << 23;\n"
    "    float m, af, r;\n"
    "    memcpy(&m, &mb, 4);\n"
    "    memcpy(&af, &a, 4);\n"
    "    r = (af + m) - m;\n"
    "    memcpy(&rb, &r, 4);\n"
    "    uint32_t sub = (uint32_t)(r < 6.103515625e-05f ? r * 16777216.0f : 0.0f); /* below 2^-14: r / 2^-24 */\n"
    "    uint32_t h = r < 6.103515625e-05f ? sub : (((rb >> 23) - 112u) << 10) | ((rb >> 13) & 0x3ffu);\n"
    "    h = r >= 65520.0f ? 0x7c00u : h;\n"
    "    h = a >= 0x7f800000u ? 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u) : h;\n"
    "    return (uint16_t)(s | h);\n"
    "}\n"
    "/* f16 bits -> f32 (exact; branch-free) */\n"
    "TSL_HELPER float tsl_h2f(uint16_t h)\n"
    "{\n"
    "    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, sb;\n"
    "    float sub = (float)m * 5.9604644775390625e-8f, f; /* m * 2^-24 */\n"
    "    memcpy(&sb, &sub, 4);\n"
    "    uint32_t x = e == 31 ? s | 0x7f800000u | (m << 13) : e ? s | ((e + 112u) << 23) | (m << 13) : s | sb;\n"
    "    memcpy(&f, &x, 4);\n"
    "    return f;\n"
    "}\n"
    "TSL_HELPER uint16_t tsl_f2bf(float f)\n"
    "{\n"
    "    uint32_t x;\n"
    "    memcpy(&x, &f, 4);\n"
    "    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);\n"
    "    x += 0x7fffu + ((x >> 16) & 1u);\n"
    "    return (uint16_t)(x >> 16);\n"
    "}\n"
    "TSL_HELPER float tsl_bf2f(uint16_t h)\n"
    "{\n"
    "    uint32_t x = (uint32_t)h << 16;\n"
    "    float f;\n"
    "    memcpy(&f, &x, 4);\n"
    "    return f;\n"
    "}\n"
    "/* an int64 wrapped to `bits` (sign-extended when sgn) */\n"
    "TSL_HELPER int64_t tsl_wrap(int64_t v, int bits, int sgn)\n"
    "{\n"
    "    uint64_t mask = (1ull << bits) - 1, u = (uint64_t)v & mask;\n"
    "    if (sgn && ((u >> (bits - 1)) & 1u)) return (int64_t)(u | ~mask);\n"
    "    return (int64_t)u;\n"
    "}\n"
    "/* a thread's bit stream: `bits` bits of u at bit `at`, slot 0 lowest */\n"
    "TSL_HELPER void tsl_bits_put(unsigned char *buf, int64_t at, uint64_t u, int bits)\n"
    "{\n"
    "    for (int b = 0; b < bits; b++, at++)\n"
    "        if ((u >> b) & 1u) buf[at / 8] |= (unsigned char)(1u << (at % 8));\n"
    "}\n"
    "TSL_HELPER uint64_t tsl_bits_get(const unsigned char *buf, int64_t at, int bits)\n"
    "{\n"
    "    uint64_t u = 0;\n"
    "    for (int b = 0; b < bits; b++, at++)\n"
    "        if ((buf[at / 8] >> (at % 8)) & 1u) u |= 1ull << b;\n"
    "    return u;\n"
    "}\n"
    "TSL_HELPER float tsl_rf16f(float x); /* codegen/c_vmath.c, below */\n"
    "TSL_HELPER float tsl_rf16(double v) { return tsl_rf16f((float)v); }\n"
    "TSL_HELPER float tsl_rbf16(double v) { return tsl_bf2f(tsl_f2bf((float)v)); }\n"
    "/* a double as a bits-bit integer (docs/language.md): truncated toward\n"
    " * zero, saturated to the type's range, NaN 0 (base/dtype.c to_int_sat) */\n"
    "TSL_HELPER int64_t tsl_rint(double v, int bits, int sgn)\n"
    "{\n"
    "    if (v != v) return 0;\n"
    "    double lim = ldexp(1.0, sgn ? bits - 1 : bits);\n"
    "    if (v >= lim) return sgn ? (int64_t)(~0ull >> (65 - bits)) : (int64_t)(~0ull >> (64 - bits));\n"
    "    if (sgn ? v <= -lim : v <= -1.0) return sgn ? (int64_t)(~0ull << (bits - 1)) : 0;\n"
    "    return sgn ? (int64_t)v : (int64_t)(uint64_t)v;\n"
    "}\n"
    /* the low-bit float conversion, the same text tessel compiles (base/lowbit_conv.h) */
    TSL_LOWBIT_STR(TSL_LOWBIT_CONV_SRC(TSL_HELPER)) "\n"
    /* fma on f16/bf16, the same text tessel compiles (base/fma16.h) */
    TSL_FMA16_STR(TSL_FMA16_SRC(TSL_HELPER)) "\n"
    "/* code into packed element e: bits [e * bits, (e + 1) * bits) of p, each\n"
    " * byte updated atomically (blocks run in parallel; neighbours share bytes) */\n"
    "TSL_HELPER void tsl_lbput(unsigned char *p, int64_t e, int bits, unsigned code)\n"
    "{\n"
    "    uint64_t b = (uint64_t)e * (unsigned)bits;\n"
    "    unsigned char *q = p + (b >> 3);\n"
    "    unsigned s = (unsigned)(b & 7u), mm = ((1u << bits) - 1u) << s, v = (code << s) & mm;\n"
    "    __atomic_fetch_and(q, (unsigned char)~mm, __ATOMIC_RELAXED);\n"
    "    __atomic_fetch_or(q, (unsigned char)v, __ATOMIC_RELAXED);\n"
    "    if (s + (unsigned)bits > 8u) {\n"
    "        __atomic_fetch_and(q + 1, (unsigned char)~(mm >> 8), __ATOMIC_RELAXED);\n"
    "        __atomic_fetch_or(q + 1, (unsigned char)(v >> 8), __ATOMIC_RELAXED);\n"
    "    }\n"
    "}\n"
    "/* a double stored into integer memory: saturated, NaN 0 (tsl_rint) */\n"
    "TSL_HELPER int64_t tsl_sti(double v) { return tsl_rint(v, 64, 1); }\n"
    "TSL_HELPER uint64_t tsl_stu(double v) { return (uint64_t)tsl_rint(v, 64, 0); }\n"
    "/* floor division / modulo / ceil division; *err on division by zero */\n"
    "TSL_HELPER int64_t tsl_fdiv(int64_t a, int64_t b, int *err)\n"
    "{\n"
    "    if (b == 0 || (a == INT64_MIN && b == -1)) {\n"
    "        *err = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    int64_t q = a / b;\n"
    "    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;\n"
    "    return q;\n"
    "}\n"
    "TSL_HELPER int64_t tsl_fmod(int64_t a, int64_t b, int *err)\n"
    "{\n"
    "    int64_t q = tsl_fdiv(a, b, err);\n"
    "    return (int64_t)((uint64_t)a - (uint64_t)q * (uint64_t)b);\n"
    "}\n"
    "TSL_HELPER int64_t tsl_cdiv(int64_t a, int64_t b, int *err)\n"
    "{\n"
    "    if (b == 0 || (a == INT64_MIN && b == -1)) {\n"
    "        *err = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return (int64_t)(0 - (uint64_t)tsl_fdiv((int64_t)(0 - (uint64_t)a), b, err));\n"
    "}\n"
    "TSL_HELPER int64_t tsl_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "TSL_HELPER int64_t tsl_max(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "/* float max / min: IEEE 754-2019 maximumNumber / minimumNumber, as the\n"
    " * interpreter (base.h dtype_max_num): a NaN operand is ignored, -0 < +0 */\n"
    "TSL_HELPER double tsl_maxn(double x, double y) { return x > y || y != y || (x == y && signbit(y)) ? x : y; }\n"
    "TSL_HELPER double tsl_minn(double x, double y) { return x < y || y != y || (x == y && !signbit(y)) ? x : y; }\n"
    "TSL_HELPER float tsl_maxnf(float x, float y) { return x > y || y != y || (x == y && signbit(y)) ? x : y; }\n"
    "TSL_HELPER float tsl_minnf(float x, float y) { return x < y || y != y || (x == y && !signbit(y)) ? x : y; }\n"
    "/* Swizzle<B,M,S> on an element offset */\n"
    "TSL_HELPER int64_t tsl_swz(int64_t x, int b, int m, int s)\n"
    "{\n"
    "    int64_t mask = ((int64_t)1 << b) - 1;\n"
    "    if (s >= 0) return x ^ ((x & (mask << (m + s))) >> s);\n"
    "    return x ^ ((x & (mask << m)) << -s);\n"
    "}\n"
    "/* cvt.rna.tf32.f32 (target_tf32_rna): 13 fraction bits dropped, to\n"
    " * nearest, ties away from zero; NaN and infinity unchanged */\n"
    "TSL_HELPER float tsl_tf32(float x)\n"
    "{\n"
    "    uint32_t u;\n"
    "    memcpy(&u, &x, 4);\n"
    "    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu;\n"
    "    memcpy(&x, &u, 4);\n"
    "    return x;\n"
    "}\n"
    "/* one warp-level mma atom of warp w, its fragments given as coordinate\n"
    " * tables from the target table (ca[2 (l na + i)] = row, col of slot i of\n"
    " * lane l in A; cb, cc likewise): fc[lane nc + i] += A . B, f32, k in\n"
    " * order; mode 1: A and B rounded to tf32 first; mode 2: D rounded to f16.\n"
    " * Rows m <= 16, k <= 16, columns n <= 128 (the mma.q rows) */\n"
    "TSL_HELPER void tsl_mma_frag(const float *a, int64_t al, int64_t at, int na, const int32_t *ca,\n"
    "                             const float *b, int64_t bl, int64_t bt, int nb, const int32_t *cb,\n"
    "                             const int32_t *cc, int nc, int kk, int64_t w, float *fc, int mode)\n"
    "{\n"
    "    float A[16][16], B[16][128];\n"
    "    for (int l = 0; l < 32; l++) {\n"
    "        for (int i = 0; i < na; i++) {\n"
    "            float x = a[(w * 32 + l) * al + at * na + i];\n"
    "            A[ca[2 * (l * na + i)]][ca[2 * (l * na + i) + 1]] = mode & 1 ? tsl_tf32(x) : x;\n"
    "        }\n"
    "        for (int i = 0; i < nb; i++) {\n"
    "            float x = b[(w * 32 + l) * bl + bt * nb + i];\n"
    "            B[cb[2 * (l * nb + i)]][cb[2 * (l * nb + i) + 1]] = mode & 1 ? tsl_tf32(x) : x;\n"
    "        }\n"
    "    }\n"
    "    for (int l = 0; l < 32; l++)\n"
    "        for (int i = 0; i < nc; i++) {\n"
    "            const int m = cc[2 * (l * nc + i)], n = cc[2 * (l * nc + i) + 1];\n"
    "            float acc = fc[l * nc + i];\n"
    "            for (int k = 0; k < kk; k++) acc += A[m][k] * B[k][n];\n"
    "            fc[l * nc + i] = mode & 2 ? tsl_rf16f(acc) : acc;\n"
    "        }\n"
    "}\n";

/* ---- statements ----------------------------------------------------------------------------- */

typedef void (*cgc_emit_fn)(cgc *c, const tile_stmt *s);

/* One emitter per opcode; NULL: not supported by the C generator. */
static const cgc_emit_fn cgc_emitters[TILE_I_COUNT] = {
    [TILE_I_ALLOC] = cgc_emit_alloc,
    [TILE_I_LOAD_GLOBAL] = cgc_emit_load,
    [TILE_I_STORE_GLOBAL] = cgc_emit_store,
    [TILE_I_LOAD_SHARED] = cgc_emit_load,
    [TILE_I_STORE_SHARED] = cgc_emit_store,
    [TILE_I_COPY_ASYNC] = cgc_emit_copy_async,
    [TILE_I_COMMIT] = cgc_emit_nothing,
    [TILE_I_WAIT] = cgc_emit_nothing,
    [TILE_I_SYNC] = cgc_emit_nothing,
    [TILE_I_MMA] = cgc_emit_mma,
    [TILE_I_CAST] = cgc_emit_elementwise,
    [TILE_I_VIEW] = cgc_emit_view,
    [TILE_I_COPY] = cgc_emit_elementwise,
    [TILE_I_NEG] = cgc_emit_elementwise,
    [TILE_I_ABS] = cgc_emit_elementwise,
    [TILE_I_EXP] = cgc_emit_elementwise,
    [TILE_I_EXP2] = cgc_emit_elementwise,
    [TILE_I_LOG] = cgc_emit_elementwise,
    [TILE_I_SQRT] = cgc_emit_elementwise,
    [TILE_I_RSQRT] = cgc_emit_elementwise,
    [TILE_I_TANH] = cgc_emit_elementwise,
    [TILE_I_SIGMOID] = cgc_emit_elementwise,
    [TILE_I_RELU] = cgc_emit_elementwise,
    [TILE_I_ADD] = cgc_emit_elementwise,
    [TILE_I_SUB] = cgc_emit_elementwise,
    [TILE_I_MUL] = cgc_emit_elementwise,
    [TILE_I_DIV] = cgc_emit_elementwise,
    [TILE_I_MAX] = cgc_emit_elementwise,
    [TILE_I_MIN] = cgc_emit_elementwise,
    [TILE_I_REDUCE_SUM] = cgc_emit_reduce,
    [TILE_I_REDUCE_MAX] = cgc_emit_reduce,
    [TILE_I_REDUCE_MIN] = cgc_emit_reduce,
    [TILE_I_SHUFFLE_XOR] = cgc_emit_shuffle,
    [TILE_I_SHUFFLE_UP] = cgc_emit_shuffle,
    [TILE_I_SHUFFLE_DOWN] = cgc_emit_shuffle,
    [TILE_I_SHUFFLE_IDX] = cgc_emit_shuffle,
    [TILE_I_BROADCAST] = cgc_emit_broadcast,
    [TILE_I_PRINT] = cgc_emit_print,
    [TILE_I_IOTA] = cgc_emit_iota,
    [TILE_I_ERF] = cgc_emit_elementwise,
    [TILE_I_NOT] = cgc_emit_elementwise,
    [TILE_I_MOD] = cgc_emit_elementwise,
    [TILE_I_POW] = cgc_emit_elementwise,
    [TILE_I_AND] = cgc_emit_elementwise,
    [TILE_I_OR] = cgc_emit_elementwise,
    [TILE_I_LT] = cgc_emit_elementwise,
    [TILE_I_LE] = cgc_emit_elementwise,
    [TILE_I_GT] = cgc_emit_elementwise,
    [TILE_I_GE] = cgc_emit_elementwise,
    [TILE_I_EQ] = cgc_emit_elementwise,
    [TILE_I_NE] = cgc_emit_elementwise,
    [TILE_I_SELECT] = cgc_emit_elementwise,
    [TILE_I_FMA] = cgc_emit_elementwise,
    [TILE_I_GATHER] = cgc_emit_gather,
    [TILE_I_SCATTER] = cgc_emit_gather,
};

/* The printed text of the next statement (preorder), for comments. */
const char *cgc_next_line(cgc *c)
{
    if (c->line_at < c->nlines) return c->lines[c->line_at++];
    return "?";
}

static void emit_stmt(cgc *c, const tile_stmt *s)
{
    const char *saved = c->text;
    c->text = cgc_next_line(c);
    cgc_line(c, "/* %s */", c->text);
    switch (s->kind) {
    case TILE_S_INSTR: {
        const tile_instr *in = &s->instr;
        cgc_line(c, "{");
        c->ind++;
        if (in->decomp) {
            cgc_emit_decomp(c, s);
        } else if ((unsigned)in->op < TILE_I_COUNT && cgc_emitters[in->op]) {
            cgc_emitters[in->op](c, s);
        } else {
            cgc_fail(c, TSL_ERR_UNAVAILABLE, "the C generator cannot emit '%s'", tile_op_info_of(in->op)->name);
        }
        cgc_div_check(c);
        c->ind--;
        cgc_line(c, "}");
        break;
    }
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET:
        cgc_line(c, "v%d = %s;", s->v->id, cgc_cx(c, s->e));
        cgc_div_check(c);
        break;
    case TILE_S_THREADS: break;
    case TILE_S_INDICES: cgc_emit_indices(c, s); break;
    case TILE_S_FOR: {
        cgc_line(c, "{");
        c->ind++;
        cgc_line(c, "const int64_t lo = %s, hi = %s, step = %s;", cgc_cx(c, s->lo), cgc_cx(c, s->hi),
          s->step ? cgc_cx(c, s->step) : "1");
        cgc_div_check(c);
        int id = cgc_rterr(c, TSL_ERR_RUNTIME, "for: the step is not positive");
        cgc_line(c, "if (step <= 0) return %d;", id);
        int ukr = cgc_emit_ukr_for(c, s); /* a selected micro-kernel: opens `if (fast) {...} else {` */
        if (c->st) break;
        c->ind += ukr;
        cgc_line(c, "for (v%d = lo; v%d < hi; v%d += step) {", s->v->id, s->v->id, s->v->id);
        c->ind++;
        const tile_value *outer = c->loopvar;
        c->loopvar = !s->step || (s->step->kind == TILE_E_INT && s->step->i == 1) ? s->v : NULL;
        cgc_emit_stmts(c, s->body);
        c->loopvar = outer;
        c->ind--;
        cgc_line(c, "}");
        if (ukr) {
            c->ind--;
            cgc_line(c, "}");
        }
        c->ind--;
        cgc_line(c, "}");
        break;
    }
    case TILE_S_IF:
        cgc_line(c, "{");
        c->ind++;
        cgc_line(c, "const int64_t cond = %s;", cgc_cx(c, s->e));
        cgc_div_check(c);
        cgc_line(c, "if (cond) {");
        c->ind++;
        cgc_emit_stmts(c, s->body);
        c->ind--;
        if (s->els) {
            cgc_line(c, "} else {");
            c->ind++;
            cgc_emit_stmts(c, s->els);
            c->ind--;
        }
        cgc_line(c, "}");
        c->ind--;
        cgc_line(c, "}");
        break;
    case TILE_S_WHILE: {
        int id = cgc_rterr(c, TSL_ERR_RUNTIME, "while: more than 2^32 iterations");
        cgc_line(c, "for (int64_t n = 0;; n++) {");
        c->ind++;
        cgc_line(c, "const int64_t cond = %s;", cgc_cx(c, s->e));
        cgc_div_check(c);
        cgc_line(c, "if (!cond) break;");
        cgc_line(c, "if (n > ((int64_t)1 << 32)) return %d;", id);
        cgc_emit_stmts(c, s->body);
        c->ind--;
        cgc_line(c, "}");
        break;
    }
    case TILE_S_PIPELINE:
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "pipeline: expand first (tile_pipeline_expand)");
        break;
    case TILE_S_WARPGROUPS:
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "warpgroups: warp-specialised kernels run on the CUDA target (sm_90a)");
        break;
    }
    c->text = saved;
}

void cgc_emit_stmts(cgc *c, const tile_block *b)
{
    for (int i = 0; b && i < b->n && !c->st; i++) emit_stmt(c, b->items[i]);
}

/* ---- storage plan ------------------------------------------------------------------------------
 * Shared tensors at the interpreter's offsets (128-byte aligned, in
 * program order); every register value its own array. */

/* Register tensors some instruction writes in place (`-> dst`). */
static void plan_mutated(cgc *c, const tile_block *b)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR) {
            const tile_instr *in = &s->instr;
            if (in->has_dst && in->dst.v && in->dst.v->kind == TILE_V_TENSOR) c->mut[in->dst.v->id] = 1;
            plan_mutated(c, in->decomp);
        }
        plan_mutated(c, s->kind == TILE_S_PIPELINE ? s->pipe.body : s->body);
        plan_mutated(c, s->els);
    }
}

/* A view between equal dtypes keeps every slot where it is (c_emit_ops.c:
 * a plain copy), so its result can share the source's registers when
 * neither is ever written in place and the source is defined earlier in
 * the same block (a later redefinition of the source, in the next
 * iteration of a loop, precedes the view again). */
static int plan_view_alias(cgc *c, const tile_block *b, int at, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *r = in->result, *x = in->nargs == 1 ? in->args[0].v : NULL;
    if (in->op != TILE_I_VIEW || in->decomp || !r || !x || in->args[0].nsteps || x->kind != TILE_V_TENSOR ||
        x->type.space != TILE_REGISTER || r->type.space != TILE_REGISTER || c->rtab[x->id] < 0 ||
        !tile_dtype_eq(x->type.dt, r->type.dt) || c->mut[x->id] || c->mut[r->id])
        return 0;
    int t = cgc_tab_of(c, &r->type, r->name);
    if (t < 0 || c->tabv[t].ns != c->tabv[c->rtab[x->id]].ns) return 0;
    int before = 0;
    for (int j = 0; j < at && !before; j++) before = b->items[j] == x->def;
    if (!before) return 0;
    c->rtab[r->id] = t;
    c->roff[r->id] = c->roff[x->id];
    return 1;
}

static void plan_block(cgc *c, const tile_block *b)
{
    for (int i = 0; b && i < b->n && !c->st; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR && plan_view_alias(c, b, i, s)) continue;
        if (s->kind == TILE_S_INSTR) {
            const tile_value *r = s->instr.result;
            /* a shared view is an alias: the same bytes */
            if (r && r->type.space == TILE_SHARED && s->instr.op == TILE_I_VIEW && s->instr.args[0].v) {
                c->soff[r->id] = c->soff[s->instr.args[0].v->id];
                continue;
            }
            if (r && r->type.space == TILE_SHARED && s->instr.op == TILE_I_ALLOC) {
                int64_t dims[CGC_MAX_RANK], n = 1;
                if (!cgc_cdims(c, r, dims)) return;
                if (!cgc_dt_ok(r->type.dt)) {
                    cgc_fail(c, TSL_ERR_UNAVAILABLE, "shared tensor '%s': only byte-sized dtypes here", r->name);
                    return;
                }
                if (r->type.layout && r->type.layout->v.kind != LAYOUT_VALUE_DATA) {
                    cgc_fail(c, TSL_ERR_SEMANTIC, "shared tensor '%s' needs a data layout", r->name);
                    return;
                }
                for (int j = 0; j < r->type.rank; j++) n *= dims[j];
                if (r->type.layout) {
                    int64_t co = layout_cosize(&r->type.layout->v.data);
                    if (co > n) n = co;
                }
                c->soff[r->id] = cgc_align_up(c->smem, 128);
                c->smem = c->soff[r->id] + n * (r->type.dt.bits / 8);
            }
            if (r && r->type.space == TILE_REGISTER && c->rtab[r->id] < 0) {
                if (!cgc_dt_reg_ok(r->type.dt)) {
                    cgc_fail(c, TSL_ERR_UNAVAILABLE, "register tensor '%s': only byte-sized dtypes here", r->name);
                    return;
                }
                int t = cgc_tab_of(c, &r->type, r->name);
                if (t < 0) return;
                c->rtab[r->id] = t;
                c->roff[r->id] = c->regs;
                c->regs = cgc_align_up(c->regs + c->tabv[t].ns * cgc_reg_size(r->type.dt), 64);
            }
            plan_block(c, s->instr.decomp);
        }
        if (s->kind == TILE_S_PIPELINE) {
            cgc_fail(c, TSL_ERR_UNAVAILABLE, "pipeline: expand first (tile_pipeline_expand)");
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
 * Launch ABI between the runtime (target_cpu.c) and the generated entry:
 *   P[p]  first element of tensor parameter p (NULL for scalars);
 *   I[]   int64 words: per tensor parameter rank dims then rank strides
 *         (elements), per scalar parameter its value, then the size
 *         symbols, then the grid extents (x, y, z). */


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

tsl_status cgc_emit_kernel(const tile_kernel *k, tsl_arena *ar, tsl_diag *d, cgc_result *res)
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
        cgc_fail(c, TSL_ERR_SEMANTIC, "%d threads per block (1..1024)", k->threads);
    for (int p = 0; p < k->nparams && !c->st; p++) {
        const tile_value *v = k->params[p];
        if (v->kind == TILE_V_TENSOR && ((!cgc_dt_ok(v->type.dt) && !cgc_dt_coded(v->type.dt)) ||
                                         v->type.rank > CGC_MAX_RANK))
            cgc_fail(c, TSL_ERR_UNAVAILABLE, "parameter '%s': only byte-sized, packed and low-bit float dtypes and "
                     "rank <= %d here", v->name, CGC_MAX_RANK);
    }
    c->mut = arena_alloc(ar, (size_t)nv);
    c->ref = arena_alloc(ar, (size_t)nv);
    c->uniform = arena_alloc(ar, (size_t)nv);
    plan_mutated(c, k->body);
    if (!c->st) plan_block(c, k->body);
    int64_t budget = k->smem_budget ? k->smem_budget : CGC_DEFAULT_SMEM;
    if (!c->st && c->smem > budget)
        cgc_fail(c, TSL_ERR_SHAPE, "needs %lld bytes of shared memory; the budget is %lld bytes",
                (long long)c->smem, (long long)budget);
    split_lines(c);
    c->ind = 1;
    if (!c->st) cgc_emit_stmts(c, k->body);
    if (c->st) {
        sb_free(&c->body);
        sb_free(&c->tabs);
        return c->st;
    }
    cgc_emit_tables(c);

    strbuf out = {0};
    char entry[256];
    cg_c_entry_name(k->name, entry, sizeof entry);
    sb_printf(&out, "/* generated by tessel codegen/c from tile kernel '%s' (%d threads per block).\n"
                    " * One call of blk() runs one thread block; %s() runs blocks [begin, end). */\n",
              k->name, k->threads, entry);
    sb_puts(&out, cgc_prelude);
    sb_puts(&out, cgc_vmath_prelude);
    sb_puts(&out, "\n");
    sb_puts(&out, sb_str(&c->tabs));
    int64_t sm = cgc_align_up(c->smem, 64), rg = cgc_align_up(c->regs, 64), ws = sm + rg + cgc_align_up(c->scratch, 64);
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
            sb_printf(&out, "    %s *const g%d = (%s *)P[%d]; /* %s */\n", cgc_mem_ctype(v->type.dt), v->id,
                      cgc_mem_ctype(v->type.dt), p, v->name);
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
                      cgc_mem_ctype(v->type.dt), v->id, cgc_mem_ctype(v->type.dt), (long long)c->soff[v->id], v->name,
                      v->id);
        if (c->rtab[v->id] >= 0)
            sb_printf(&out, "    %s *%sr%d = (%s *)(ws + %lld); /* register %s: %s */\n    (void)r%d;\n",
                      cgc_reg_ctype(v->type.dt), c->ref[v->id] ? "" : "const ", v->id, cgc_reg_ctype(v->type.dt),
                      (long long)(sm + c->roff[v->id]), v->name, c->tabv[c->rtab[v->id]].text, v->id);
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
tsl_status cgc_prepare(const tile_module *m, const tile_kernel *k, tsl_arena *ar, tsl_diag *d,
                          const tile_kernel **out)
{
    *out = k;
    /* instruction selection (target/select.h), here until the compile
     * driver runs it between pipeline expansion and emission */
    if (!has_pipeline(k->body)) return target_select((tile_module *)m, (tile_kernel *)k, &target_cpu, NULL, d);
    strbuf sb = {0};
    tile_print_kernel(&sb, k);
    char *text = arena_strdup(ar, sb_str(&sb));
    sb_free(&sb);
    tsl_source src = {"<pipeline expansion>", text};
    tile_module *copy = NULL;
    tsl_status st = tile_parse(ar, &src, d, &copy);
    if (!st) st = tile_pipeline_expand(copy, &src, 0, d);
    if (!st) st = target_select(copy, copy->kernels[0], &target_cpu, NULL, d);
    if (st) return st;
    *out = copy->kernels[0];
    return TSL_OK;
}

tsl_status cg_c_emit(const tile_module *m, const tile_kernel *k, strbuf *out, tsl_diag *d)
{
    tsl_arena *ar = arena_create();
    const tile_kernel *kk;
    cgc_result res = {0};
    tsl_status st = cgc_prepare(m, k, ar, d, &kk);
    if (!st) st = cgc_emit_kernel(kk, ar, d, &res);
    if (!st) sb_puts(out, res.source);
    free(res.source);
    arena_free(ar);
    return st;
}
