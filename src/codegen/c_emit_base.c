/* c_emit_base.c — the C generator's vocabulary: messages and run-time
 * errors, dtypes as C types and conversions, register tables, int
 * expressions, layouts as C expressions, views of operands and element
 * access (global masked, shared checked). Internal to src/codegen/c*.c;
 * c_int.h declares it. */
#include <math.h>
#include <string.h>

#include "codegen/c_int.h"

void cgc_fail(cgc *c, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
void cgc_fail(cgc *c, tsl_status st, const char *fmt, ...)
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
int cgc_rterr(cgc *c, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
int cgc_rterr(cgc *c, tsl_status st, const char *fmt, ...)
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

void cgc_line(cgc *c, const char *fmt, ...) TSL_PRINTF(2, 3);
void cgc_line(cgc *c, const char *fmt, ...)
{
    for (int i = 0; i < c->ind; i++) sb_puts(&c->body, "    ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&c->body, fmt, ap);
    va_end(ap);
    sb_putc(&c->body, '\n');
}

int64_t cgc_align_up(int64_t x, int64_t a)
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
int cgc_dt_ok(tile_dtype t)
{
    tsl_dtype x; /* packed and low-bit float memory: not yet (scheduled plans hold carriers, sched/lowbit.c) */
    return tile_dtype_to_tsl(t, &x) == 0 && !dtype_is_packed(x) && !dtype_desc_is_lowfloat(t);
}

int cgc_dt_coded(tile_dtype t)
{
    return dtype_desc_is_lowfloat(t) || ((t.kind == TILE_DT_INT || t.kind == TILE_DT_UINT) && t.bits < 8);
}

/* The C type of a value of dtype t (sub-byte integers: the next C width). */
static const char *plain_ctype(tile_dtype t)
{
    switch (t.kind) {
    case TILE_DT_FLOAT: return t.bits == 16 ? "uint16_t" : t.bits == 32 ? "float" : "double";
    case TILE_DT_BOOL: return "uint8_t";
    case TILE_DT_INT:
        return t.bits <= 8 ? "int8_t" : t.bits <= 16 ? "int16_t" : t.bits <= 32 ? "int32_t" : "int64_t";
    default:
        return t.bits <= 8 ? "uint8_t" : t.bits <= 16 ? "uint16_t" : t.bits <= 32 ? "uint32_t" : "uint64_t";
    }
}

/* C type of an element in memory (global, shared); coded dtypes: bytes. */
const char *cgc_mem_ctype(tile_dtype t)
{
    return cgc_dt_coded(t) ? "uint8_t" : plain_ctype(t);
}

/* C type of a register element (sub-byte integers: the next C width). */
const char *cgc_reg_ctype(tile_dtype t)
{
    if (t.kind == TILE_DT_FLOAT) return t.bits == 64 ? "double" : "float";
    return plain_ctype(t);
}

int64_t cgc_reg_size(tile_dtype t)
{
    if (t.kind == TILE_DT_FLOAT) return t.bits == 64 ? 8 : 4;
    return t.bits <= 8 ? 1 : t.bits <= 16 ? 2 : t.bits <= 32 ? 4 : 8;
}

/* Registers also hold integers of any width 1..64 (i6, u4: views of packed
 * bytes); floats only the tessel ones. */
int cgc_dt_reg_ok(tile_dtype t)
{
    if (t.kind == TILE_DT_INT || t.kind == TILE_DT_UINT) return t.bits >= 1 && t.bits <= 64;
    return cgc_dt_ok(t) || dtype_desc_is_lowfloat(t); /* a low-bit float register holds its value */
}

/* An int64 expression wrapped to integer register dtype t. */
char *cgc_wrap(cgc *c, tile_dtype t, const char *v)
{
    if (t.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(uint8_t)((%s) != 0)", v);
    if (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64)
        return arena_printf(c->ar, "(%s)(%s)", cgc_reg_ctype(t), v);
    return arena_printf(c->ar, "(%s)tsl_wrap(%s, %d, %d)", cgc_reg_ctype(t), v, t.bits, t.kind == TILE_DT_INT);
}

/* A double expression `v` rounded to register dtype t (interp round_to). */
char *cgc_rnd(cgc *c, tile_dtype t, const char *v)
{
    if (dt_f16(t)) return arena_printf(c->ar, "tsl_rf16(%s)", v);
    if (dt_bf16(t)) return arena_printf(c->ar, "tsl_rbf16(%s)", v);
    if (dtype_desc_is_lowfloat(t)) /* a low-bit float register holds its value as a float */
        return arena_printf(c->ar, "tsl_lbdec(tsl_lbenc((float)(%s), %d, %d, %d, %d), %d, %d, %d, %d)", v, t.exp,
                            t.man, t.bias, t.special, t.exp, t.man, t.bias, t.special);
    if (t.kind == TILE_DT_FLOAT) return arena_printf(c->ar, "(%s)(%s)", cgc_reg_ctype(t), v);
    if (t.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(uint8_t)((%s) != 0)", v);
    return arena_printf(c->ar, "(%s)tsl_rint(%s, %d, %d)", cgc_reg_ctype(t), v, t.bits,
                        t.kind == TILE_DT_INT);
}

/* A memory element `x` of dtype t as a double (dtype_load). */
char *cgc_mem_to_dbl(cgc *c, tile_dtype t, const char *x)
{
    if (dt_f16(t)) return arena_printf(c->ar, "(double)tsl_h2f(%s)", x);
    if (dt_bf16(t)) return arena_printf(c->ar, "(double)tsl_bf2f(%s)", x);
    if (t.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(double)((%s) != 0)", x);
    return arena_printf(c->ar, "(double)(%s)", x);
}

/* A double `v` as a memory element of dtype t (dtype_store). */
char *cgc_dbl_to_mem(cgc *c, tile_dtype t, const char *v)
{
    if (dt_f16(t)) return arena_printf(c->ar, "tsl_f2h((float)(%s))", v);
    if (dt_bf16(t)) return arena_printf(c->ar, "tsl_f2bf((float)(%s))", v);
    if (t.kind == TILE_DT_FLOAT) return arena_printf(c->ar, "(%s)(%s)", cgc_mem_ctype(t), v);
    if (t.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(uint8_t)((%s) != 0)", v);
    if (t.kind == TILE_DT_INT) return arena_printf(c->ar, "(%s)tsl_sti(%s)", cgc_mem_ctype(t), v);
    return arena_printf(c->ar, "(%s)tsl_stu(%s)", cgc_mem_ctype(t), v);
}

int cgc_dt_int(tile_dtype t)
{
    return t.kind == TILE_DT_INT || t.kind == TILE_DT_UINT || t.kind == TILE_DT_BOOL;
}

/* Memory element x (dtype m) -> register value of dtype r. Between
 * integer dtypes through int64 (exact, wrapped as a C conversion; a
 * double holds only 53 bits), otherwise through the number. A coded m: x
 * is the element's code (cgc_global_elem). */
char *cgc_load_conv(cgc *c, tile_dtype m, tile_dtype r, const char *x)
{
    if (cgc_dt_coded(m)) {
        char *v = m.kind == TILE_DT_FLOAT
                      ? arena_printf(c->ar, "tsl_lbdec(%s, %d, %d, %d, %d)", x, m.exp, m.man, m.bias, m.special)
                      : arena_printf(c->ar, "tsl_wrap((int64_t)(%s), %d, %d)", x, m.bits, m.kind == TILE_DT_INT);
        if (tile_dtype_eq(m, r)) return m.kind == TILE_DT_FLOAT ? v : cgc_wrap(c, r, v);
        return cgc_rnd(c, r, arena_printf(c->ar, "(double)(%s)", v));
    }
    if (tile_dtype_eq(m, r)) {
        if (dt_f16(m)) return arena_printf(c->ar, "tsl_h2f(%s)", x);
        if (dt_bf16(m)) return arena_printf(c->ar, "tsl_bf2f(%s)", x);
        if (m.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(uint8_t)((%s) != 0)", x);
        return arena_strdup(c->ar, x);
    }
    if (cgc_dt_int(m) && cgc_dt_int(r)) return cgc_wrap(c, r, arena_printf(c->ar, "(int64_t)(%s)", x));
    return cgc_rnd(c, r, cgc_mem_to_dbl(c, m, x));
}

/* Register value x (dtype r) -> memory element of dtype m (integers to
 * integers exactly, as cgc_load_conv; a coded m: the element's code, for
 * tsl_lbput). */
char *cgc_store_conv(cgc *c, tile_dtype r, tile_dtype m, const char *x)
{
    if (cgc_dt_coded(m)) {
        if (m.kind == TILE_DT_FLOAT)
            return arena_printf(c->ar, "tsl_lbenc((float)(double)(%s), %d, %d, %d, %d)", x, m.exp, m.man, m.bias,
                                m.special);
        if (cgc_dt_int(r)) return arena_printf(c->ar, "(unsigned)((uint64_t)(int64_t)(%s) & 0x%xu)", x, (1u << m.bits) - 1);
        return arena_printf(c->ar, "(unsigned)((uint64_t)tsl_sti((double)(%s)) & 0x%xu)", x, (1u << m.bits) - 1);
    }
    if (tile_dtype_eq(m, r)) {
        if (dt_f16(m)) return arena_printf(c->ar, "tsl_f2h(%s)", x);
        if (dt_bf16(m)) return arena_printf(c->ar, "tsl_f2bf(%s)", x);
        return arena_strdup(c->ar, x);
    }
    if (cgc_dt_int(m) && cgc_dt_int(r)) {
        if (m.kind == TILE_DT_BOOL) return arena_printf(c->ar, "(uint8_t)((%s) != 0)", x);
        return arena_printf(c->ar, "(%s)(int64_t)(%s)", cgc_mem_ctype(m), x);
    }
    return cgc_dbl_to_mem(c, m, arena_printf(c->ar, "(double)(%s)", x));
}

/* The value a register slot outside the tensor holds (the interpreter's
 * NaN; integer registers cannot hold it and get 0). */
const char *cgc_pad_value(tile_dtype t)
{
    return t.kind == TILE_DT_FLOAT ? "NAN" : "0";
}

/* ---- register tables ------------------------------------------------------------ */

int cgc_tab_of(cgc *c, const tile_type *ty, const char *name)
{
    if (!ty->layout || ty->layout->v.kind != LAYOUT_VALUE_DIST) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "register tensor '%s' needs a distributed layout", name);
        return -1;
    }
    if (ty->rank < 1 || ty->rank > CGC_MAX_RANK) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "register tensor '%s' has rank %d (1..%d here)", name,
                ty->rank, CGC_MAX_RANK);
        return -1;
    }
    int64_t dims[CGC_MAX_RANK];
    for (int i = 0; i < ty->rank; i++)
        if (!tile_expr_const(ty->dims[i], &dims[i]) || dims[i] < 1) {
            cgc_fail(c, TSL_ERR_SHAPE, "register tensor '%s': dim %d is not a positive constant", name, i);
            return -1;
        }
    for (int t = 0; t < c->ntab; t++)
        if (c->tabv[t].rank == ty->rank && !strcmp(c->tabv[t].text, ty->layout->text) &&
            !memcmp(c->tabv[t].dims, dims, sizeof(int64_t) * (size_t)ty->rank))
            return t;
    const dist_layout *dl = &ty->layout->v.dist;
    if (dl->threads > c->k->threads) {
        cgc_fail(c, TSL_ERR_SHAPE, "register tensor '%s': its layout spans %lld threads, the block has %d",
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
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "register tensor '%s' has %lld slots per block", name, (long long)t.ns);
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
    /* identity: slot s holds the s-th element in row-major order */
    int64_t numel = 1;
    for (int i = 0; i < t.rank; i++) numel *= dims[i];
    t.ident = t.ns == numel;
    for (int64_t s = 0; s < t.ns && t.ident; s++) {
        int64_t x = s;
        for (int i = t.rank - 1; i >= 0 && t.ident; i--) {
            t.ident = t.coord[s * t.rank + i] == x % dims[i] && t.own[s];
            x /= dims[i];
        }
    }
    t.tident = t.rank == 2 && t.ns == numel && !t.ident;
    for (int64_t s = 0; s < t.ns && t.tident; s++)
        t.tident = t.coord[s * 2] == s % dims[0] && t.coord[s * 2 + 1] == s / dims[0] && t.own[s];
    ARENA_PUSH(c->ar, c->tabv, c->ntab, c->captab, t);
    return c->ntab - 1;
}

const char *cgc_tab_coord(cgc *c, int t)
{
    c->tabv[t].used_coord = 1;
    return arena_printf(c->ar, "TC%d", t);
}

/* Coordinate d of slot `i` (a C expression): closed form when the layout
 * enumerates the tensor row-major with no padding or replication, else
 * the table. */
char *cgc_tab_at(cgc *c, int t, const char *i, int d)
{
    const cgc_tab *tb = &c->tabv[t];
    if (tb->ident) {
        int64_t rest = 1;
        for (int j = d + 1; j < tb->rank; j++) rest *= tb->dims[j];
        if (d == 0) return rest == 1 ? arena_printf(c->ar, "(%s)", i) : arena_printf(c->ar, "(%s / %lld)", i, (long long)rest);
        return arena_printf(c->ar, "(%s / %lld %% %lld)", i, (long long)rest, (long long)tb->dims[d]);
    }
    return arena_printf(c->ar, "(int64_t)%s[%s][%d]", cgc_tab_coord(c, t), i, d);
}

/* Condition "slot i lies inside the tensor". */
char *cgc_tab_valid(cgc *c, int t, const char *i)
{
    if (c->tabv[t].ident) return "1";
    return arena_printf(c->ar, "%s[%s][0] >= 0", cgc_tab_coord(c, t), i);
}

/* Condition "slot i is the lowest owner of its coordinate". */
char *cgc_tab_owner(cgc *c, int t, const char *i)
{
    if (c->tabv[t].ident) return "1";
    return arena_printf(c->ar, "%s[%s]", cgc_tab_own(c, t), i);
}

const char *cgc_tab_own(cgc *c, int t)
{
    c->tabv[t].used_own = 1;
    return arena_printf(c->ar, "TO%d", t);
}

void cgc_emit_tables(cgc *c)
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
const char *cgc_emit_i32_table(cgc *c, const char *what, const int64_t *v, int64_t n)
{
    const char *name = arena_printf(c->ar, "TX%d", c->tmp++);
    sb_printf(&c->tabs, "/* %s */\nstatic const int32_t %s[%lld] = {", what, name, (long long)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) sb_printf(&c->tabs, "%s%lld,", i % 16 ? " " : "\n    ", (long long)v[i]);
    if (!n) sb_puts(&c->tabs, "0");
    sb_puts(&c->tabs, "\n};\n");
    return name;
}

/* ---- int expressions ---------------------------------------------------------------- */

char *cgc_cx(cgc *c, const tile_expr *e);

static char *cx_bin(cgc *c, const tile_expr *e)
{
    char *a = cgc_cx(c, e->a), *b = cgc_cx(c, e->b);
    switch (e->op) {
    /* both sides are evaluated, as the interpreter does */
    case TILE_OP_OR: return arena_printf(c->ar, "((int64_t)((int)((%s) != 0) | (int)((%s) != 0)))", a, b);
    case TILE_OP_AND: return arena_printf(c->ar, "((int64_t)((int)((%s) != 0) & (int)((%s) != 0)))", a, b);
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
    cgc_fail(c, TSL_ERR_INTERNAL, "unknown operator");
    return "0";
}

/* An int expression as C (int64_t), with the interpreter's meaning. */
char *cgc_cx(cgc *c, const tile_expr *e)
{
    if (!e) {
        cgc_fail(c, TSL_ERR_INTERNAL, "missing expression");
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
            cgc_fail(c, TSL_ERR_SEMANTIC, "'%s' is not an int scalar", e->v ? e->v->name : "?");
            return "0";
        }
        return arena_printf(c->ar, "v%d", e->v->id);
    case TILE_E_BLOCK_IDX: return e->dim == 0 ? "bx" : e->dim == 1 ? "by" : "bz";
    case TILE_E_THREAD_IDX:
        if (!c->in_decomp) {
            cgc_fail(c, TSL_ERR_SEMANTIC, "thread_idx outside a decomposition");
            return "0";
        }
        return "tid";
    case TILE_E_NEG: return arena_printf(c->ar, "((int64_t)(0 - (uint64_t)(%s)))", cgc_cx(c, e->a));
    case TILE_E_NOT: return arena_printf(c->ar, "((int64_t)!(%s))", cgc_cx(c, e->a));
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
char *cgc_cnum(cgc *c, const tile_expr *e)
{
    if (e && e->kind == TILE_E_FLOAT) return dbl_lit(c, e->f);
    if (e && e->kind == TILE_E_NEG && e->a && e->a->kind == TILE_E_FLOAT) return dbl_lit(c, -e->a->f);
    return arena_printf(c->ar, "(double)%s", cgc_cx(c, e));
}

/* An int scalar expression (no float literal or float scalar in it)? */
int cgc_int_expr(const tile_expr *e)
{
    if (!e) return 0;
    if (e->kind == TILE_E_FLOAT) return 0;
    if (e->kind == TILE_E_VALUE && tile_value_is_typed_scalar(e->v) && e->v->type.dt.kind == TILE_DT_FLOAT) return 0;
    return (!e->a || cgc_int_expr(e->a)) && (!e->b || cgc_int_expr(e->b));
}

/* A scalar (alloc init, load fill, operand) as a register element of
 * dtype t: an int expression into an integer dtype exactly (int64,
 * wrapped to the width: an identity such as INT64_MAX or UINT64_MAX,
 * written -1, must not pass through a double), anything else as the
 * interpreter rounds its number. */
char *cgc_num_to_reg(cgc *c, tile_dtype t, const tile_expr *e)
{
    if (cgc_dt_int(t) && cgc_int_expr(e)) return cgc_wrap(c, t, cgc_cx(c, e));
    return cgc_rnd(c, t, cgc_cnum(c, e));
}

/* After a statement whose expressions may divide by zero. */
void cgc_div_check(cgc *c)
{
    if (!c->divs) return;
    c->divs = 0;
    int id = cgc_rterr(c, TSL_ERR_RUNTIME, "division by zero");
    cgc_line(c, "if (err) return %d;", id);
}

/* A temporary holding an int expression (evaluated once, here). */
char *cgc_tmp_int(cgc *c, const tile_expr *e)
{
    int64_t v;
    if (tile_expr_const(e, &v)) return arena_printf(c->ar, "((int64_t)%lld)", (long long)v);
    char *name = arena_printf(c->ar, "t%d", c->tmp++);
    cgc_line(c, "const int64_t %s = %s;", name, cgc_cx(c, e));
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

char *cgc_gname(cgc *c, const tile_value *v)
{
    return arena_printf(c->ar, "g%d", v->id);
}

char *cgc_rname(cgc *c, const tile_value *v)
{
    return arena_printf(c->ar, "r%d", v->id);
}

/* Constant dims of a shared or register tensor. */
int cgc_cdims(cgc *c, const tile_value *v, int64_t *dims)
{
    if (v->type.rank > CGC_MAX_RANK) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "tensor '%s' has rank %d; at most %d", v->name, v->type.rank,
                CGC_MAX_RANK);
        return 0;
    }
    for (int i = 0; i < v->type.rank; i++)
        if (!tile_expr_const(v->type.dims[i], &dims[i]) || dims[i] < 1) {
            cgc_fail(c, TSL_ERR_SHAPE, "tensor '%s' dim %d is not a positive constant", v->name, i);
            return 0;
        }
    return 1;
}

/* ---- views ------------------------------------------------------------------------------
 * An operand T[...].tile([..])[...] as, per dimension, a chain of steps:
 * coord = off0 + T0(off1 + T1(... x)) (interp view_of / view_map). */



/* The thread's local shape of a distributed layout: per dim, the product
 * of its local factors (interp local_shape). Slot of a local coordinate:
 * row-major over it. */
void cgc_local_shape(const dist_layout *l, int64_t *ld)
{
    for (int i = 0; i < l->rank; i++) ld[i] = 1;
    for (int k = 0; k < l->naxes; k++)
        if (!l->axis[k].is_thread && l->axis[k].dim >= 0) ld[l->axis[k].dim] *= l->axis[k].extent;
}

int cgc_view_of(cgc *c, const tile_operand *o, cgc_view *vw)
{
    memset(vw, 0, sizeof *vw);
    if (!o->v || o->v->kind != TILE_V_TENSOR) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "expected a tensor operand");
        return 0;
    }
    const tile_value *v = o->v;
    vw->v = v;
    vw->rank = v->type.rank;
    if ((vw->rank < 1 && v->type.space != TILE_GLOBAL) || vw->rank > CGC_MAX_RANK) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "tensor '%s' has rank %d (1..%d here)", v->name, vw->rank,
                CGC_MAX_RANK);
        return 0;
    }
    if (v->type.space != TILE_GLOBAL && !cgc_cdims(c, v, vw->dims)) return 0;
    for (int i = 0; i < vw->rank; i++) vw->ext[i] = -1;
    int tiled = 0;
    const layout *ptiler[CGC_MAX_RANK];
    int64_t psize[CGC_MAX_RANK];
    for (int s = 0; s < o->nsteps; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_LOCAL) {
            if (!c->in_decomp || s != 0 || v->type.space != TILE_REGISTER || !v->type.layout ||
                v->type.layout->v.kind != LAYOUT_VALUE_DIST) {
                cgc_fail(c, TSL_ERR_SEMANTIC,
                        "'.local' is the thread's part of a register tensor, inside a decomposition");
                return 0;
            }
            const dist_layout *dl = &v->type.layout->v.dist;
            vw->local = 1;
            vw->rank = dl->rank;
            cgc_local_shape(dl, vw->dims);
            for (int i = 0; i < vw->rank; i++) vw->ext[i] = vw->dims[i];
            continue;
        }
        if (st->n > vw->rank) {
            cgc_fail(c, TSL_ERR_SHAPE, "%d indices for '%s' of rank %d", st->n, v->name, vw->rank);
            return 0;
        }
        if (st->kind == TILE_STEP_TILE) {
            if (tiled) {
                cgc_fail(c, TSL_ERR_SEMANTIC, "tile of a tensor of tiles: index it first");
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
                cgc_fail(c, TSL_ERR_UNAVAILABLE, "view chain too deep");
                return 0;
            }
            char *x = i < st->n ? cgc_tmp_int(c, st->idx[i]) : "((int64_t)0)";
            const layout *tl = NULL;
            char *off = x;
            if (tiled) {
                if (ptiler[i]) {
                    /* tile x of a non-contiguous tiler: offset = complement(tiler)(x) */
                    int64_t ext = vw->ext[i] >= 0 ? vw->ext[i] : vw->dims[i];
                    if (v->type.space == TILE_GLOBAL && vw->ext[i] < 0 &&
                        !tile_expr_const(v->type.dims[i], &ext)) {
                        cgc_fail(c, TSL_ERR_UNAVAILABLE,
                                "a non-contiguous tile of global '%s' dim %d needs a constant extent",
                                v->name, i);
                        return 0;
                    }
                    layout *comp = arena_alloc(c->ar, sizeof *comp);
                    layout_err le = {{0}, 0};
                    if (layout_complement(comp, ptiler[i], ext, &le)) {
                        cgc_fail(c, TSL_ERR_SEMANTIC, "tile of '%s' dim %d: %s", v->name, i, le.msg);
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
        cgc_fail(c, TSL_ERR_SEMANTIC, "a tensor of tiles must be indexed to be transferred");
        return 0;
    }
    return 1;
}

/* Base coordinate of view dim i for view coordinate expression x. */
char *cgc_view_map(cgc *c, const cgc_view *vw, int i, const char *x)
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
int cgc_view_fit_dims(cgc *c, const cgc_view *vw, const int64_t *dims, int r)
{
    int lead = vw->rank - r;
    for (int i = 0; i < vw->rank; i++) {
        int j = i - lead;
        if (j >= 0 && vw->ext[i] >= 0 && vw->ext[i] != dims[j]) {
            cgc_fail(c, TSL_ERR_SHAPE, "tile of '%s' has extent %lld in dim %d, the other operand %lld",
                    vw->v->name, (long long)vw->ext[i], i, (long long)dims[j]);
            return 0;
        }
    }
    for (int j = 0; j < -lead; j++)
        if (dims[j] != 1) {
            cgc_fail(c, TSL_ERR_SHAPE, "a rank-%d tile does not fit '%s' of rank %d", r, vw->v->name, vw->rank);
            return 0;
        }
    return 1;
}

int cgc_view_fit(cgc *c, const cgc_view *vw, int t)
{
    return cgc_view_fit_dims(c, vw, c->tabv[t].dims, c->tabv[t].rank);
}

/* View coordinate expression of view dim i from register coordinates
 * `rc` (C array expression, e.g. TC3[i]) of rank r, right-aligned. */
static char *view_vc(cgc *c, const cgc_view *vw, int t, const char *slot, int i)
{
    int lead = vw->rank - c->tabv[t].rank;
    int j = i - lead;
    if (j < 0) return "(int64_t)0";
    return cgc_tab_at(c, t, slot, j);
}

/* Emit `const int64_t cN = ...` for every dim of the view from register
 * coordinates; gives the names. */
char **cgc_emit_coords(cgc *c, const cgc_view *vw, int t, const char *slot, const char *pfx)
{
    char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    for (int i = 0; i < vw->rank; i++) {
        cs[i] = arena_printf(c->ar, "%s%d", pfx, i);
        cgc_line(c, "const int64_t %s = %s;", cs[i], cgc_view_map(c, vw, i, view_vc(c, vw, t, slot, i)));
    }
    return cs;
}

/* Condition "coordinate inside the global tensor". */
char *cgc_global_inb(cgc *c, const cgc_view *vw, char **cs)
{
    strbuf sb = {0};
    const char *g = cgc_gname(c, vw->v);
    for (int i = 0; i < vw->rank; i++)
        sb_printf(&sb, "%s(uint64_t)%s < (uint64_t)%s_d%d", i ? " && " : "", cs[i], g, i);
    char *r = arena_strdup(c->ar, vw->rank ? sb_str(&sb) : "1");
    sb_free(&sb);
    return r;
}

char *cgc_global_elem(cgc *c, const cgc_view *vw, char **cs)
{
    strbuf sb = {0};
    const char *g = cgc_gname(c, vw->v);
    tile_dtype t = vw->v->type.dt;
    if (cgc_dt_coded(t)) sb_printf(&sb, "tsl_lbget(%s, ", g); /* the code at bit e * bits */
    else sb_printf(&sb, "%s[", g);
    if (!vw->rank) sb_puts(&sb, "0"); /* rank 0: the one element */
    for (int i = 0; i < vw->rank; i++) sb_printf(&sb, "%s%s * %s_s%d", i ? " + " : "", cs[i], g, i);
    if (cgc_dt_coded(t)) sb_printf(&sb, ", %d)", t.bits);
    else sb_puts(&sb, "]");
    char *r = arena_strdup(c->ar, sb_str(&sb));
    sb_free(&sb);
    return r;
}

/* A store of code `code` into a coded global element (cs in bounds). */
char *cgc_global_put(cgc *c, const cgc_view *vw, char **cs, const char *code)
{
    strbuf sb = {0};
    const char *g = cgc_gname(c, vw->v);
    sb_printf(&sb, "tsl_lbput(%s, ", g);
    if (!vw->rank) sb_puts(&sb, "0");
    for (int i = 0; i < vw->rank; i++) sb_printf(&sb, "%s%s * %s_s%d", i ? " + " : "", cs[i], g, i);
    sb_printf(&sb, ", %d, %s)", vw->v->type.dt.bits, code);
    char *r = arena_strdup(c->ar, sb_str(&sb));
    sb_free(&sb);
    return r;
}

/* Shared access: a bounds check returning a run-time error, then the
 * element expression through the tensor's data layout. */
char *cgc_shared_elem(cgc *c, const cgc_view *vw, char **cs, int write)
{
    strbuf sb = {0};
    for (int i = 0; i < vw->rank; i++)
        sb_printf(&sb, "%s(uint64_t)%s >= %lldu", i ? " || " : "", cs[i], (long long)vw->dims[i]);
    int id = cgc_rterr(c, TSL_ERR_BOUNDS, "%s of shared '%s' outside its shape", write ? "write" : "read",
                    vw->v->name);
    cgc_line(c, "if (%s) return %d;", sb_str(&sb), id);
    sb_free(&sb);
    return cgc_shared_elem_at(c, vw, cs);
}

/* The element expression alone (the caller has checked the bounds). */
char *cgc_shared_elem_at(cgc *c, const cgc_view *vw, char **cs)
{
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
const tile_value *cgc_reg_dst(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (in->result) {
        if (in->result->type.space != TILE_REGISTER) {
            cgc_fail(c, TSL_ERR_SEMANTIC, "the result must be a register tensor");
            return NULL;
        }
        return in->result;
    }
    if (in->has_dst && in->dst.v && in->dst.v->kind == TILE_V_TENSOR && !in->dst.nsteps &&
        in->dst.v->type.space == TILE_REGISTER)
        return in->dst.v;
    cgc_fail(c, TSL_ERR_SEMANTIC, "the destination must be a whole register tensor");
    return NULL;
}

const tile_value *cgc_reg_arg(cgc *c, const tile_operand *o)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_REGISTER || o->nsteps) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "'%s' must be a whole register tensor here", o->v ? o->v->name : "?");
        return NULL;
    }
    return o->v;
}

int cgc_rt(cgc *c, const tile_value *v)
{
    return c->rtab[v->id];
}

void cgc_need_scratch(cgc *c, int64_t bytes)
{
    if (bytes > c->scratch) c->scratch = bytes;
}
