/* cuda.c — tile IR -> CUDA C with inline PTX (DESIGN.md §5, issue 4 item 3).
 *
 * Requires: a verified kernel (tile_verify); pipelines are expanded here on
 * a copy. Guarantees: one template body `tsl_body_<name><I>` instantiated
 * as <entry>_i32 (I = int for index arithmetic) or, when the source is
 * compiled with CG_CUDA_INDEX64 (-DTSL_INDEX64), as <entry>_i64 (long long),
 * semantics equal to the tile interpreter's (src/tile/interp.c):
 *   - a register tensor is `T v[L]` per thread (L = locals of its layout);
 *     the coordinate of (threadIdx.x, l) is thread_part(tid) + local_part(l),
 *     both from the layout's chain of single-dim factors (layout.h
 *     dist_axis); local_part is a compile-time constant, so every array
 *     index is a constant and the arrays stay in registers;
 *   - shared tensors sit at fixed byte offsets of one dynamic buffer, the
 *     element offset from the data layout (swizzle included) in closed form;
 *   - global loads/stores are masked (fill value outside), strides come
 *     from the launch; copy_async uses cp.async with zero fill;
 *   - mma on m16n8k16 fragments is mma.sync inline PTX; reductions use
 *     warp shuffles when the reduced dim lives inside warps; everything
 *     else that moves data between threads goes through a shared scratch
 *     area (the generic fallback), placed after the allocations.
 * Decompositions (`decomp { }`) print as what each thread runs, through
 * the decomposition walk the interpreter and the C generator share
 * (cuda_decomp.c): collective atoms (ldmatrix) as their rows'
 * instructions, other moves element by element. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fma16.h"
#include "base/lowbit_conv.h"
#include "codegen/cuda.h"
#include "codegen/cuda_int.h"
#include "layout/layout.h"

/* ---- errors and output ------------------------------------------------------ */

tsl_status cg_err(cg *c, tsl_status st, const char *fmt, ...)
{
    if (c->st) return c->st;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(c->d, st, "cuda codegen: kernel '%s': %s", c->k->name, msg);
    c->st = st;
    return st;
}

void cg_line(cg *c, const char *fmt, ...)
{
    for (int i = 0; i < c->ind; i++) sb_puts(c->o, "    ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(c->o, fmt, ap);
    va_end(ap);
    sb_putc(c->o, '\n');
}

/* C name of a value: v<id>_<name> (IR names are identifiers; the id keeps
 * shadowed names apart). */
const char *cg_name(cg *c, const tile_value *v)
{
    char *buf = c->names[c->nameslot++ % CG_NAMEBUFS];
    snprintf(buf, 96, "v%d_%s", v->id, v->name);
    return buf;
}

/* The storage type of a dtype in CUDA C; NULL for low-bit types. */
const char *cg_ctype(tile_dtype dt)
{
    static const char *const lowbit[2][8] = {
        {NULL, "tsl_lb<1, 1>", "tsl_lb<2, 1>", "tsl_lb<3, 1>", "tsl_lb<4, 1>", "tsl_lb<5, 1>", "tsl_lb<6, 1>", "tsl_lb<7, 1>"},
        {NULL, "tsl_lb<1, 0>", "tsl_lb<2, 0>", "tsl_lb<3, 0>", "tsl_lb<4, 0>", "tsl_lb<5, 0>", "tsl_lb<6, 0>", "tsl_lb<7, 0>"},
    };
    tsl_dtype t;
    if ((dt.kind == TILE_DT_INT || dt.kind == TILE_DT_UINT) && dt.bits >= 1 && dt.bits < 8)
        return lowbit[dt.kind == TILE_DT_UINT][dt.bits];
    if (dtype_desc_is_lowfloat(dt)) return "float"; /* registers only: the value (cg_lowfloat_round) */
    if (tile_dtype_to_tsl(dt, &t)) return NULL;
    switch (t) {
    case TSL_DTYPE_F16: return "tsl_f16";
    case TSL_DTYPE_BF16: return "tsl_bf16";
    case TSL_DTYPE_F32: return "float";
    case TSL_DTYPE_F64: return "double";
    case TSL_DTYPE_I8: return "signed char";
    case TSL_DTYPE_I16: return "short";
    case TSL_DTYPE_I32: return "int";
    case TSL_DTYPE_I64: return "long long";
    case TSL_DTYPE_U8: return "unsigned char";
    case TSL_DTYPE_U16: return "unsigned short";
    case TSL_DTYPE_U32: return "unsigned int";
    case TSL_DTYPE_U64: return "unsigned long long";
    case TSL_DTYPE_BOOL: return "bool";
    default: return NULL;
    }
}

int cg_esize(tile_dtype dt)
{
    return dt.bits / 8;
}

/* Arithmetic happens in float for f16/bf16/f32 (as the interpreter rounds
 * through float), in double for everything else. */
int cg_is_float_math(tile_dtype dt)
{
    return dt.kind == TILE_DT_FLOAT && dt.bits <= 32;
}

int cg_dt_coded(tile_dtype dt)
{
    return dtype_desc_is_lowfloat(dt) || ((dt.kind == TILE_DT_INT || dt.kind == TILE_DT_UINT) && dt.bits < 8);
}

const char *cg_mem_ctype(tile_dtype dt)
{
    return cg_dt_coded(dt) ? "unsigned char" : cg_ctype(dt);
}

void cg_coded_read(strbuf *out, tile_dtype md, const char *ptr, const char *off, tile_dtype rd)
{
    const char *rt = cg_ctype(rd);
    if (md.kind == TILE_DT_FLOAT) {
        sb_printf(out, "tsl_to<%s>::f((double)tsl_lbdec(tsl_lbget(%s, (long long)(%s), %d), %d, %d, %d, %d))", rt, ptr,
                  off, md.bits, md.exp, md.man, md.bias, md.special);
        return;
    }
    /* the code's value: sign-extended for a signed width */
    sb_printf(out, "tsl_to<%s>::f((long long)(((int)tsl_lbget(%s, (long long)(%s), %d) ^ %d) - %d))", rt, ptr, off,
              md.bits, md.kind == TILE_DT_INT ? 1 << (md.bits - 1) : 0, md.kind == TILE_DT_INT ? 1 << (md.bits - 1) : 0);
}

tsl_status cg_check_dtype(cg *c, const tile_value *v)
{
    char nb[16];
    if (cg_ctype(v->type.dt) && ((v->type.dt.bits % 8 == 0 && !dtype_desc_is_lowfloat(v->type.dt)) ||
                                 v->kind != TILE_V_TENSOR || v->type.space == TILE_REGISTER))
        return TSL_OK;
    /* packed and low-bit float inputs are read from global memory as codes */
    if (cg_ctype(v->type.dt) && v->type.space == TILE_GLOBAL && cg_dt_coded(v->type.dt)) return TSL_OK;
    if (cg_ctype(v->type.dt))
        return cg_err(c, TSL_ERR_UNAVAILABLE,
                      "'%s' is a %s tensor of %s: the CUDA generator holds sub-byte types in registers and "
                      "global memory only (view packed bytes as them in registers)",
                      v->name, tile_space_name(v->type.space), tile_dtype_name(v->type.dt, nb));
    return cg_err(c, TSL_ERR_UNAVAILABLE,
                  "'%s' has dtype %s: the CUDA generator handles the byte-sized dtypes only",
                  v->name, tile_dtype_name(v->type.dt, nb));
}

/* ---- expressions -------------------------------------------------------------- */

static void expr_bin(cg *c, strbuf *sb, const char *fn, const tile_expr *e)
{
    sb_printf(sb, "%s<%s>(", fn, c->expr_ll ? "long long" : "I");
    cg_expr(c, sb, e->a);
    sb_puts(sb, ", ");
    cg_expr(c, sb, e->b);
    sb_puts(sb, ")");
}

/* An int expression of type I. */
void cg_expr(cg *c, strbuf *sb, const tile_expr *e)
{
    static const char *const optext[] = {
#define X(n, t, p) t,
        TILE_BINOPS(X)
#undef X
    };
    /* I: the kernel's index type; long long where the expression is a
     * value (cg_num_to), and for a constant past 32 bits, so that
     * INT64_MAX stays INT64_MAX in the 32-bit variant */
    const char *it = c->expr_ll ? "long long" : "I";
    switch (e->kind) {
    case TILE_E_INT:
        if (e->i == INT64_MIN) sb_puts(sb, "(-9223372036854775807LL - 1)");
        else if (e->i > INT32_MAX || e->i < INT32_MIN) sb_printf(sb, "(%lldLL)", (long long)e->i);
        else sb_printf(sb, "((%s)%lldLL)", it, (long long)e->i);
        return;
    case TILE_E_FLOAT: sb_printf(sb, "((%s)%.17g)", it, e->f); return;
    case TILE_E_VALUE:
        if (c->expr_ll) sb_printf(sb, "((long long)%s)", cg_name(c, e->v));
        else sb_puts(sb, cg_name(c, e->v));
        return;
    case TILE_E_BLOCK_IDX: sb_printf(sb, "((%s)blockIdx.%c)", it, "xyz"[e->dim]); return;
    case TILE_E_THREAD_IDX: sb_puts(sb, c->expr_ll ? "((long long)tid)" : "tid"); return;
    case TILE_E_NEG: sb_puts(sb, "(-"); cg_expr(c, sb, e->a); sb_puts(sb, ")"); return;
    case TILE_E_NOT: sb_printf(sb, "((%s)!(", it); cg_expr(c, sb, e->a); sb_puts(sb, "))"); return;
    case TILE_E_BIN:
        switch (e->op) {
        case TILE_OP_DIV: expr_bin(c, sb, "tsl_fdiv", e); return;
        case TILE_OP_MOD: expr_bin(c, sb, "tsl_fmod", e); return;
        case TILE_OP_CDIV: expr_bin(c, sb, "tsl_cdiv", e); return;
        case TILE_OP_MIN: expr_bin(c, sb, "tsl_min", e); return;
        case TILE_OP_MAX: expr_bin(c, sb, "tsl_max", e); return;
        case TILE_OP_ADD:
        case TILE_OP_SUB:
        case TILE_OP_MUL:
            sb_puts(sb, "(");
            cg_expr(c, sb, e->a);
            sb_printf(sb, " %s ", optext[e->op]);
            cg_expr(c, sb, e->b);
            sb_puts(sb, ")");
            return;
        default: /* comparisons and logic give 0/1 */
            sb_printf(sb, "((%s)(", it);
            cg_expr(c, sb, e->a);
            sb_printf(sb, " %s ", optext[e->op]);
            cg_expr(c, sb, e->b);
            sb_puts(sb, "))");
            return;
        }
    }
}

/* A number (fill, init, scalar operand) as a C double expression. */
void cg_num(cg *c, strbuf *sb, const tile_expr *e)
{
    if (e->kind == TILE_E_FLOAT) {
        if (isnan(e->f)) sb_puts(sb, "__longlong_as_double(0x7ff8000000000000LL)");
        else if (isinf(e->f)) sb_printf(sb, "%s__longlong_as_double(0x7ff0000000000000LL)", e->f < 0 ? "-" : "");
        else sb_printf(sb, "((double)%.17g)", e->f);
        return;
    }
    if (e->kind == TILE_E_NEG) {
        sb_puts(sb, "(-");
        cg_num(c, sb, e->a);
        sb_puts(sb, ")");
        return;
    }
    sb_puts(sb, "((double)");
    cg_expr(c, sb, e);
    sb_puts(sb, ")");
}

int cg_dt_int(tile_dtype t)
{
    return t.kind == TILE_DT_INT || t.kind == TILE_DT_UINT || t.kind == TILE_DT_BOOL;
}

/* An int scalar expression (no float literal or float scalar in it)? */
int cg_int_expr(const tile_expr *e)
{
    if (!e) return 0;
    if (e->kind == TILE_E_FLOAT) return 0;
    if (e->kind == TILE_E_VALUE && tile_value_is_typed_scalar(e->v) && e->v->type.dt.kind == TILE_DT_FLOAT) return 0;
    return (!e->a || cg_int_expr(e->a)) && (!e->b || cg_int_expr(e->b));
}

/* A number (init, fill, scalar operand) as a value of register dtype t:
 * an int expression into an integer dtype exactly (in long long, wrapped
 * by tsl_to: INT64_MAX, or UINT64_MAX written -1, must not pass through a
 * double), anything else through the double, as the interpreter rounds. */
void cg_num_to(cg *c, strbuf *sb, tile_dtype t, const tile_expr *e)
{
    sb_printf(sb, "tsl_to<%s>::f(", cg_ctype(t));
    if (cg_dt_int(t) && cg_int_expr(e)) {
        int was = c->expr_ll;
        c->expr_ll = 1;
        sb_puts(sb, "(long long)");
        cg_expr(c, sb, e);
        c->expr_ll = was;
    } else {
        cg_num(c, sb, e);
    }
    sb_putc(sb, ')');
}

/* ---- register tensors --------------------------------------------------------- */

tsl_status cg_rinfo(cg *c, const tile_value *v, rinfo *ri)
{
    memset(ri, 0, sizeof *ri);
    if (c->st) return c->st;
    if (v->kind != TILE_V_TENSOR || v->type.space != TILE_REGISTER || !v->type.layout ||
        v->type.layout->v.kind != LAYOUT_VALUE_DIST)
        return cg_err(c, TSL_ERR_SEMANTIC, "'%s' is not a register tensor with a distributed layout",
                      v->name);
    if (cg_check_dtype(c, v)) return c->st;
    const dist_layout *L = &v->type.layout->v.dist;
    ri->v = v;
    ri->L = L;
    ri->rank = v->type.rank;
    ri->lead = L->rank - ri->rank;
    ri->threads = L->threads;
    ri->locals = L->locals;
    if (ri->rank > CG_MAX_RANK || ri->lead < 0)
        return cg_err(c, TSL_ERR_UNAVAILABLE, "register tensor '%s': rank %d with a rank-%d layout",
                      v->name, ri->rank, L->rank);
    for (int i = 0; i < ri->rank; i++)
        if (!tile_expr_const(v->type.dims[i], &ri->dims[i]))
            return cg_err(c, TSL_ERR_SHAPE, "register tensor '%s' needs constant dims", v->name);
    for (int i = 0; i < L->rank; i++) {
        int64_t want = i < ri->lead ? 1 : ri->dims[i - ri->lead];
        if (L->shape[i] != want)
            return cg_err(c, TSL_ERR_UNAVAILABLE,
                          "register tensor '%s': its layout's shape differs from its dims "
                          "(the CUDA generator needs an exact cover)",
                          v->name);
    }
    if (ri->threads != c->threads)
        return cg_err(c, TSL_ERR_SHAPE, "register tensor '%s' spans %lld threads, the kernel runs %d",
                      v->name, (long long)ri->threads, c->threads);
    /* the chain, least significant factor first */
    int64_t tdiv = 1, mult[DIST_MAX_RANK];
    for (int d = 0; d < L->rank; d++) mult[d] = 1;
    for (int i = L->naxes - 1; i >= 0; i--) {
        const dist_axis *a = &L->axis[i];
        if (a->is_thread) {
            if (a->dim < 0) {
                ri->rep[ri->nrep].div = tdiv;
                ri->rep[ri->nrep++].ext = a->extent;
            } else if (a->dim >= ri->lead) {
                ri->term[ri->nterm].dim = a->dim - ri->lead;
                ri->term[ri->nterm].div = tdiv;
                ri->term[ri->nterm].ext = a->extent;
                ri->term[ri->nterm++].w = mult[a->dim];
            }
            tdiv *= a->extent;
        }
        if (a->dim >= 0) mult[a->dim] *= a->extent;
    }
    ri->lc = calloc((size_t)(ri->locals * (ri->rank ? ri->rank : 1)), sizeof *ri->lc);
    if (!ri->lc) return cg_err(c, TSL_ERR_NOMEM, "out of memory");
    int64_t full[DIST_MAX_RANK];
    for (int64_t l = 0; l < ri->locals; l++) {
        dist_layout_map(L, 0, l, full);
        for (int d = 0; d < ri->rank; d++) ri->lc[l * ri->rank + d] = full[ri->lead + d];
    }
    /* the closed form must be the layout's function (it is by construction;
     * this keeps a layout.c change from silently breaking the generator) */
    for (int64_t t = 0; t < ri->threads; t++)
        for (int64_t l = 0; l < ri->locals; l++) {
            dist_layout_map(L, t, l, full);
            for (int d = 0; d < ri->rank; d++)
                if (full[ri->lead + d] != cg_rinfo_tpart(ri, t, d) + ri->lc[l * ri->rank + d])
                    return cg_err(c, TSL_ERR_INTERNAL,
                                  "register tensor '%s': closed form of its layout disagrees with "
                                  "dist_layout_map at thread %lld local %lld",
                                  v->name, (long long)t, (long long)l);
        }
    return TSL_OK;
}

void cg_rinfo_free(rinfo *ri)
{
    free(ri->lc);
    ri->lc = NULL;
}

int64_t cg_rinfo_tpart(const rinfo *ri, int64_t t, int d)
{
    int64_t x = 0;
    for (int i = 0; i < ri->nterm; i++)
        if (ri->term[i].dim == d) x += ((t / ri->term[i].div) % ri->term[i].ext) * ri->term[i].w;
    return x;
}

/* thread_part(tid) of dim d as C code. */
void cg_tpart(cg *c, strbuf *sb, const rinfo *ri, int d)
{
    int any = 0;
    for (int i = 0; i < ri->nterm; i++) {
        if (ri->term[i].dim != d) continue;
        if (any) sb_puts(sb, " + ");
        any = 1;
        int64_t dv = ri->term[i].div, ex = ri->term[i].ext, w = ri->term[i].w;
        sb_puts(sb, "(");
        if (dv == 1) sb_puts(sb, "tid");
        else sb_printf(sb, "(tid / %lld)", (long long)dv);
        if (dv * ex < c->threads) sb_printf(sb, " %% %lld", (long long)ex);
        sb_puts(sb, ")");
        if (w != 1) sb_printf(sb, " * %lld", (long long)w);
    }
    if (!any) sb_puts(sb, "0");
}

/* The condition "this thread is the lowest replica" (replicas hold the same
 * value; one of them writes it). */
void cg_owner(cg *c, strbuf *sb, const rinfo *ri)
{
    (void)c;
    if (!ri->nrep) {
        sb_puts(sb, "true");
        return;
    }
    for (int i = 0; i < ri->nrep; i++) {
        if (i) sb_puts(sb, " && ");
        sb_printf(sb, "((tid / %lld) %% %lld) == 0", (long long)ri->rep[i].div, (long long)ri->rep[i].ext);
    }
}

/* ---- shared and global addressing ---------------------------------------------- */

tsl_status cg_shared_dims(cg *c, const tile_value *v, int64_t *dims)
{
    for (int i = 0; i < v->type.rank; i++)
        if (!tile_expr_const(v->type.dims[i], &dims[i]))
            return cg_err(c, TSL_ERR_SHAPE, "shared tensor '%s' needs constant dims", v->name);
    return TSL_OK;
}

static tsl_status shared_off(cg *c, strbuf *sb, const tile_value *v, char *const *co, int swizzle);

/* Element offset of shared tensor v at coordinates `co` (C expressions). */
tsl_status cg_shared_off(cg *c, strbuf *sb, const tile_value *v, char *const *co)
{
    return shared_off(c, sb, v, co, 1);
}

tsl_status cg_shared_off_plain(cg *c, strbuf *sb, const tile_value *v, char *const *co)
{
    return shared_off(c, sb, v, co, 0);
}

static tsl_status shared_off(cg *c, strbuf *sb, const tile_value *v, char *const *co, int swizzle)
{
    int r = v->type.rank;
    int64_t dims[CG_MAX_RANK];
    if (cg_shared_dims(c, v, dims)) return c->st;
    if (!v->type.layout) {
        sb_puts(sb, "(");
        for (int i = 0; i < r; i++) {
            int64_t inner = 1;
            for (int j = i + 1; j < r; j++) inner *= dims[j];
            sb_printf(sb, "%s(%s) * %lld", i ? " + " : "", co[i], (long long)inner);
        }
        if (!r) sb_puts(sb, "0");
        sb_puts(sb, ")");
        return TSL_OK;
    }
    const layout *L = &v->type.layout->v.data;
    if (v->type.layout->v.kind != LAYOUT_VALUE_DATA || layout_rank(L) != r)
        return cg_err(c, TSL_ERR_UNAVAILABLE,
                      "shared tensor '%s': its layout needs one top-level mode per dim", v->name);
    if (L->sw.b && swizzle) sb_printf(sb, "tsl_swz<%d, %d, %d, I>", L->sw.b, L->sw.m, L->sw.s);
    sb_puts(sb, "(");
    int any = 0;
    for (int i = 0; i < r; i++) {
        layout m = layout_mode(L, i);
        int64_t sh[LAYOUT_MAX_NODES], st[LAYOUT_MAX_NODES];
        int n = layout_leaves(&m, sh, st);
        int64_t before = 1;
        for (int j = 0; j < n; j++) {
            if (sh[j] == 1 || st[j] == 0) {
                before *= sh[j];
                continue;
            }
            if (any) sb_puts(sb, " + ");
            any = 1;
            sb_puts(sb, "(");
            if (before == 1) sb_printf(sb, "(%s)", co[i]);
            else sb_printf(sb, "((%s) / %lld)", co[i], (long long)before);
            if (j < n - 1) sb_printf(sb, " %% %lld", (long long)sh[j]);
            sb_printf(sb, ") * %lld", (long long)st[j]);
            before *= sh[j];
        }
    }
    if (!any) sb_puts(sb, "0");
    sb_puts(sb, ")");
    return TSL_OK;
}

/* Element offset of shared v at constant coordinates (generation time). */
int64_t cg_shared_off_const(const tile_value *v, const int64_t *dims, const int64_t *co)
{
    if (!v->type.layout) {
        int64_t e = 0;
        for (int i = 0; i < v->type.rank; i++) e = e * dims[i] + co[i];
        return e;
    }
    return layout_eval_coord(&v->type.layout->v.data, co, v->type.rank);
}

/* A view of a global or shared operand: per dim, the offset of the tile
 * as C code and its extent (-1: not tiled). */
tsl_status cg_view(cg *c, const tile_operand *o, gview *gv)
{
    memset(gv, 0, sizeof *gv);
    if (c->st) return c->st;
    if (!o->v || o->v->kind != TILE_V_TENSOR)
        return cg_err(c, TSL_ERR_SEMANTIC, "expected a tensor operand");
    const tile_value *v = o->v;
    if (cg_check_dtype(c, v)) return c->st;
    gv->v = v;
    gv->rank = v->type.rank;
    if (gv->rank > CG_MAX_RANK) return cg_err(c, TSL_ERR_UNAVAILABLE, "'%s': rank above %d", v->name, CG_MAX_RANK);
    strbuf off[CG_MAX_RANK];
    memset(off, 0, sizeof off);
    int tiled = 0;
    int64_t psize[CG_MAX_RANK];
    for (int i = 0; i < gv->rank; i++) {
        gv->ext[i] = -1;
        psize[i] = 1;
        sb_puts(&off[i], "(I)0");
    }
    for (int s = 0; s < o->nsteps && !c->st; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_LOCAL || st->n > gv->rank) {
            cg_err(c, TSL_ERR_UNAVAILABLE, "'%s': a view the CUDA generator does not handle here", v->name);
            break;
        }
        if (st->kind == TILE_STEP_TILE) {
            tiled = 1;
            for (int i = 0; i < gv->rank; i++) {
                int j = i - (gv->rank - st->n);
                psize[i] = j >= 0 ? st->sizes[j] : 1;
                if (j >= 0 && st->tilers[j]) {
                    layout co = layout_coalesce(&st->tilers[j]->v.data);
                    int64_t sh[LAYOUT_MAX_NODES], sd[LAYOUT_MAX_NODES];
                    int n = layout_leaves(&co, sh, sd);
                    if (n != 1 || (sd[0] != 1 && sh[0] != 1))
                        cg_err(c, TSL_ERR_UNAVAILABLE,
                               "'%s': non-contiguous tiles outside a decomposition", v->name);
                }
            }
            continue;
        }
        for (int i = 0; i < gv->rank && i < st->n; i++) {
            sb_puts(&off[i], " + ");
            if (tiled) sb_puts(&off[i], "(");
            cg_expr(c, &off[i], st->idx[i]);
            if (tiled) sb_printf(&off[i], ") * %lld", (long long)psize[i]);
        }
        if (tiled)
            for (int i = 0; i < gv->rank; i++) gv->ext[i] = psize[i];
        tiled = 0;
    }
    for (int i = 0; i < gv->rank; i++) gv->off[i] = sb_take(&off[i]);
    if (tiled) cg_err(c, TSL_ERR_SEMANTIC, "a tensor of tiles must be indexed to be transferred");
    return c->st;
}

void cg_view_free(gview *gv)
{
    for (int i = 0; i < CG_MAX_RANK; i++) {
        free(gv->off[i]);
        gv->off[i] = NULL;
    }
}

/* ---- the comment above each instruction ----------------------------------------- */

static void print_operand(strbuf *sb, const tile_operand *o)
{
    if (!o->v) {
        tile_print_expr(sb, o->scalar);
        return;
    }
    sb_puts(sb, o->v->name);
    for (int s = 0; s < o->nsteps; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_LOCAL) {
            sb_puts(sb, ".local");
        } else if (st->kind == TILE_STEP_TILE) {
            sb_puts(sb, ".tile([");
            for (int i = 0; i < st->n; i++) {
                if (i) sb_puts(sb, ", ");
                if (st->tilers[i]) sb_puts(sb, st->tilers[i]->text);
                else sb_printf(sb, "%lld", (long long)st->sizes[i]);
            }
            sb_puts(sb, "])");
        } else {
            sb_puts(sb, "[");
            for (int i = 0; i < st->n; i++) {
                if (i) sb_puts(sb, ", ");
                tile_print_expr(sb, st->idx[i]);
            }
            sb_puts(sb, "]");
        }
    }
}

static void comment_instr(cg *c, const tile_instr *in)
{
    strbuf sb = {0};
    if (in->result) sb_printf(&sb, "%s = ", in->result->name);
    sb_puts(&sb, tile_op_info_of(in->op)->name);
    for (int i = 0; i < in->nargs; i++) {
        sb_puts(&sb, i ? ", " : " ");
        print_operand(&sb, &in->args[i]);
    }
    if (in->has_dst) {
        sb_puts(&sb, " -> ");
        print_operand(&sb, &in->dst);
    } else if (in->result && tile_op_info_of(in->op)->res == TILE_RES_TYPE) {
        sb_puts(&sb, " -> ");
        tile_print_type(&sb, &in->result->type);
    }
    if (in->init) {
        sb_puts(&sb, in->op == TILE_I_ALLOC ? " init " : " fill ");
        tile_print_expr(&sb, in->init);
    }
    if (in->dim >= 0 && (tile_op_is_reduce(in->op) || in->op == TILE_I_BROADCAST))
        sb_printf(&sb, " dim %d", in->dim);
    if (in->bytes) sb_printf(&sb, " bytes %lld", (long long)in->bytes);
    if (in->atom) sb_printf(&sb, " atom %s", in->atom);
    if (in->decomp) sb_puts(&sb, " decomp { ... }");
    /* keep the comment a comment */
    char *t = sb_take(&sb);
    for (char *p = t; *p; p++)
        if (*p == '\n' || (p[0] == '*' && p[1] == '/')) *p = ' ';
    cg_line(c, "/* %s */", t);
    free(t);
}

/* ---- statements -------------------------------------------------------------- */

static void emit_block(cg *c, const tile_block *b);

/* Does e read only size symbols, int parameters and constants (the same
 * value in every thread of every block of a launch)? */
static int size_only(const tile_kernel *k, const tile_expr *e)
{
    switch (e->kind) {
    case TILE_E_INT: return 1;
    case TILE_E_VALUE:
        for (int i = 0; i < k->nsyms; i++)
            if (k->syms[i] == e->v) return 1;
        for (int i = 0; i < k->nparams; i++)
            if (k->params[i] == e->v && e->v->kind == TILE_V_SCALAR && !tile_value_is_typed_scalar(e->v)) return 1;
        return 0;
    case TILE_E_NEG:
    case TILE_E_NOT: return size_only(k, e->a);
    case TILE_E_BIN: return size_only(k, e->a) && size_only(k, e->b);
    default: return 0;
    }
}

static void emit_stmt(cg *c, const tile_stmt *s)
{
    strbuf e = {0};
    switch (s->kind) {
    case TILE_S_INSTR:
        comment_instr(c, &s->instr);
        cg_instr(c, s);
        break;
    case TILE_S_LET:
    case TILE_S_VAR:
        cg_expr(c, &e, s->e);
        cg_line(c, "%sI %s = %s;", s->kind == TILE_S_LET ? "const " : "", cg_name(c, s->v), sb_str(&e));
        break;
    case TILE_S_SET:
        cg_expr(c, &e, s->e);
        cg_line(c, "%s = %s;", cg_name(c, s->v), sb_str(&e));
        break;
    case TILE_S_FOR: {
        strbuf lo = {0}, hi = {0}, st = {0};
        cg_expr(c, &lo, s->lo);
        cg_expr(c, &hi, s->hi);
        if (s->step) cg_expr(c, &st, s->step);
        else sb_puts(&st, "1");
        const char *n = cg_name(c, s->v);
        /* a pipeline loop of barriers, TMA and wgmma stays rolled: unrolling
         * buys nothing there and triples ptxas's time (docs/codegen.md) */
        if (cg_hopper_block_used(s->body)) cg_line(c, "#pragma unroll 1");
        else if (s->unroll) cg_line(c, "#pragma unroll");
        cg_line(c, "for (I %s = %s; %s < %s; %s += %s) {", n, sb_str(&lo), n, sb_str(&hi), n, sb_str(&st));
        sb_free(&lo);
        sb_free(&hi);
        sb_free(&st);
        c->ind++;
        emit_block(c, s->body);
        c->ind--;
        cg_line(c, "}");
        break;
    }
    case TILE_S_IF:
        cg_expr(c, &e, s->e);
        if (c->br && c->br->n < CG_CUDA_MAX_BRANCHES && size_only(c->k, s->e)) {
            /* a size branch: with TSL_IF<n> defined the preprocessor keeps
             * one arm, so the compiler never sees the other */
            int n = c->br->n++, up = c->br_parent, uparm = c->br_arm;
            c->br->cond[n] = s->e;
            c->br->parent[n] = up;
            c->br->arm[n] = uparm;
            cg_line(c, "#ifndef TSL_IF%d", n);
            cg_line(c, "if (%s)", sb_str(&e));
            cg_line(c, "#endif");
            cg_line(c, "#if !defined(TSL_IF%d) || TSL_IF%d", n, n);
            cg_line(c, "{");
            c->ind++;
            c->br_parent = n;
            c->br_arm = 1;
            emit_block(c, s->body);
            c->br_arm = 0;
            cg_line(c, "}");
            cg_line(c, "#endif");
            if (s->els) {
                cg_line(c, "#ifndef TSL_IF%d", n);
                cg_line(c, "else");
                cg_line(c, "#endif");
                cg_line(c, "#if !defined(TSL_IF%d) || !TSL_IF%d", n, n);
                cg_line(c, "{");
                c->ind++;
                emit_block(c, s->els);
                c->ind--;
                cg_line(c, "}");
                cg_line(c, "#endif");
            }
            c->br_parent = up;
            c->br_arm = uparm;
            break;
        }
        cg_line(c, "if (%s) {", sb_str(&e));
        c->ind++;
        emit_block(c, s->body);
        c->ind--;
        if (s->els) {
            cg_line(c, "} else {");
            c->ind++;
            emit_block(c, s->els);
            c->ind--;
        }
        cg_line(c, "}");
        break;
    case TILE_S_WHILE:
        cg_expr(c, &e, s->e);
        cg_line(c, "while (%s) {", sb_str(&e));
        c->ind++;
        emit_block(c, s->body);
        c->ind--;
        cg_line(c, "}");
        break;
    case TILE_S_PIPELINE:
        cg_err(c, TSL_ERR_INTERNAL, "a pipeline survived expansion");
        break;
    case TILE_S_WARPGROUPS: cg_hopper_warpgroups(c, s, emit_block); break;
    case TILE_S_THREADS:
    case TILE_S_INDICES:
        cg_err(c, TSL_ERR_UNAVAILABLE, "thread groups are only meaningful inside a decomposition");
        break;
    }
    sb_free(&e);
}

static void emit_block(cg *c, const tile_block *b)
{
    for (int i = 0; i < b->n && !c->st; i++) emit_stmt(c, b->items[i]);
    /* the wgmma accumulators declared in b go out of scope with it: later
     * wgmma_waits must not fence them */
    for (int i = 0; i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind != TILE_S_INSTR || !s->instr.result) continue;
        for (int j = 0; j < c->naccs; j++)
            if (c->accs[j] == s->instr.result) {
                c->accs[j] = c->accs[--c->naccs];
                break;
            }
    }
}

/* ---- shared-memory plan ------------------------------------------------------- */

static void plan_block(cg *c, const tile_block *b)
{
    for (int i = 0; b && i < b->n && !c->st; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR && s->instr.op == TILE_I_ALLOC && s->instr.result &&
            s->instr.result->type.space == TILE_SHARED) {
            const tile_value *v = s->instr.result;
            if (cg_check_dtype(c, v)) return;
            int64_t n = tile_type_numel(&v->type);
            if (n < 0) {
                cg_err(c, TSL_ERR_SHAPE, "shared tensor '%s' needs constant dims", v->name);
                return;
            }
            int64_t cos = n;
            if (v->type.layout && v->type.layout->v.kind == LAYOUT_VALUE_DATA)
                cos = layout_cosize(&v->type.layout->v.data);
            if (cos < n) cos = n;
            /* a swizzled tensor starts on 1024 bytes: the hardware's swizzle
             * (TMA, wgmma) works on address bits, the layout's on offsets */
            int64_t al = v->type.layout && v->type.layout->v.kind == LAYOUT_VALUE_DATA &&
                                 v->type.layout->v.data.sw.b
                             ? 1024
                             : 128;
            c->smem = (c->smem + al - 1) / al * al;
            c->soff[v->id] = c->smem;
            c->smem += cos * cg_esize(v->type.dt);
        }
        if (s->kind == TILE_S_FOR || s->kind == TILE_S_IF || s->kind == TILE_S_WHILE) {
            plan_block(c, s->body);
            plan_block(c, s->els);
        }
        for (int r = 0; r < s->nroles; r++) plan_block(c, s->roles[r].body);
        /* a shared view is an alias: the same bytes */
        if (s->kind == TILE_S_INSTR && s->instr.op == TILE_I_VIEW && s->instr.result &&
            s->instr.result->type.space == TILE_SHARED && s->instr.args[0].v)
            c->soff[s->instr.result->id] = c->soff[s->instr.args[0].v->id];
    }
}

/* ---- the source ---------------------------------------------------------------- */

static const char prelude[] =
    "#pragma nv_diag_suppress 177 /* helpers a kernel does not use */\n"
    "/* The hardware primitives: inline PTX on the GPU; with TSL_EMULATE defined\n"
    " * a host emulation supplies them (tests/unit/test_codegen_cuda.c). */\n"
    "#ifndef TSL_EMULATE\n"
    "#define TSL_SMEM_DECL extern __shared__ __align__(128) unsigned char tsl_smem[]\n"
    "static __device__ __forceinline__ float tsl_cvt_f16_f32(unsigned short h) {\n"
    "    float f;\n"
    "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
    "    return f;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned short tsl_cvt_f32_f16(float x) {\n"
    "    unsigned short h;\n"
    "    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(x));\n"
    "    return h;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned short tsl_cvt_f32_bf16(float x) {\n"
    "    unsigned short h;\n"
    "    asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(x));\n"
    "    return h;\n"
    "}\n"
    "/* e^x as `exp.approx` asks: ex2 of x log2(e), denormals flushed (__expf's\n"
    " * ex2 without .ftz costs a compare and two selects an element) */\n"
    "static __device__ __forceinline__ float tsl_ex2_exp(float x) {\n"
    "    float y;\n"
    "    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x * 1.4426950408889634f));\n"
    "    return y;\n"
    "}\n"
    "/* 2^x as `exp2.approx` asks: one MUFU.EX2, denormals flushed */\n"
    "static __device__ __forceinline__ float tsl_ex2(float x) {\n"
    "    float y;\n"
    "    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n"
    "    return y;\n"
    "}\n"
    "/* tanh as `tanh.approx` asks: one MUFU.TANH (2^-11 of the value; a\n"
    " * 16-bit rounding follows) */\n"
    "static __device__ __forceinline__ float tsl_tanh_approx(float x) {\n"
    "    float y;\n"
    "    asm(\"tanh.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n"
    "    return y;\n"
    "}\n"
    "/* sigmoid as `sigmoid.approx` asks: 1 / (1 + 2^(-x log2 e)) by ex2 and\n"
    " * rcp, denormals flushed (0 and 1 at the ends) */\n"
    "static __device__ __forceinline__ float tsl_sigmoid_approx(float x) {\n"
    "    float e, y;\n"
    "    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(e) : \"f\"(x * -1.4426950408889634f));\n"
    "    asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(1.0f + e));\n"
    "    return y;\n"
    "}\n"
    "/* cp.async with zero fill past src_bytes; groups; waits */\n"
    "static __device__ __forceinline__ void tsl_cp_async16(void *s, const void *g, int src_bytes) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(s);\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(a), \"l\"(g), \"r\"(src_bytes) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_cp_async8(void *s, const void *g, int src_bytes) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(s);\n"
    "    asm volatile(\"cp.async.ca.shared.global [%0], [%1], 8, %2;\\n\" :: \"r\"(a), \"l\"(g), \"r\"(src_bytes) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_cp_async4(void *s, const void *g, int src_bytes) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(s);\n"
    "    asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4, %2;\\n\" :: \"r\"(a), \"l\"(g), \"r\"(src_bytes) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_cp_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\"); }\n"
    "template <int N> static __device__ __forceinline__ void tsl_cp_wait() {\n"
    "    asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N) : \"memory\");\n"
    "}\n"
    "/* D = A.B + D on one m16n8k16 atom: a 4 x b32 (8 halves), b 2 x b32, d 4 x f32 */\n"
    "static __device__ __forceinline__ void tsl_mma_f16(float &d0, float &d1, float &d2, float &d3, unsigned a0,\n"
    "                                                   unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
    "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
    "                 : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mma_bf16(float &d0, float &d1, float &d2, float &d3, unsigned a0,\n"
    "                                                    unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
    "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
    "                 : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    "/* ldmatrix: lanes 8i..8i+7 give the row addresses of 8x8 b16 matrix i */\n"
    "static __device__ __forceinline__ void tsl_ldsm_x4(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3, const void *p) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"
    "                 : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3) : \"r\"(a));\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_ldsm_x2_trans(unsigned &r0, unsigned &r1, const void *p) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\\n\" : \"=r\"(r0), \"=r\"(r1) : \"r\"(a));\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_ldsm_x1(unsigned &r0, const void *p) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\\n\" : \"=r\"(r0) : \"r\"(a));\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_ldsm_x2(unsigned &r0, unsigned &r1, const void *p) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\\n\" : \"=r\"(r0), \"=r\"(r1) : \"r\"(a));\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_ldsm_x1_trans(unsigned &r0, const void *p) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\\n\" : \"=r\"(r0) : \"r\"(a));\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_ldsm_x4_trans(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3,\n"
    "                                                         const void *p) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"
    "                 : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3) : \"r\"(a));\n"
    "}\n"
    "/* stmatrix (sm_90): lanes 8i..8i+7 give the row addresses of matrix i, registers as ldmatrix delivers them */\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "static __device__ __forceinline__ void tsl_stsm_x1(void *p, unsigned r0) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};\\n\" :: \"r\"(a), \"r\"(r0) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_stsm_x2(void *p, unsigned r0, unsigned r1) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1,%2};\\n\" :: \"r\"(a), \"r\"(r0), \"r\"(r1) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_stsm_x4(void *p, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\\n\"\n"
    "                 :: \"r\"(a), \"r\"(r0), \"r\"(r1), \"r\"(r2), \"r\"(r3) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_stsm_x1_trans(void *p, unsigned r0) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};\\n\" :: \"r\"(a), \"r\"(r0) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_stsm_x2_trans(void *p, unsigned r0, unsigned r1) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1,%2};\\n\"\n"
    "                 :: \"r\"(a), \"r\"(r0), \"r\"(r1) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_stsm_x4_trans(void *p, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};\\n\"\n"
    "                 :: \"r\"(a), \"r\"(r0), \"r\"(r1), \"r\"(r2), \"r\"(r3) : \"memory\");\n"
    "}\n"
    "#endif\n"
    "/* f16 accumulators: c0..c3 are halves, packed in pairs (c0 low) */\n"
    "static __device__ __forceinline__ void tsl_mma_f16_f16(unsigned short &d0, unsigned short &d1, unsigned short &d2,\n"
    "                                                       unsigned short &d3, unsigned a0, unsigned a1, unsigned a2,\n"
    "                                                       unsigned a3, unsigned b0, unsigned b1) {\n"
    "    unsigned c0 = (unsigned)d0 | ((unsigned)d1 << 16), c1 = (unsigned)d2 | ((unsigned)d3 << 16);\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};\\n\"\n"
    "                 : \"+r\"(c0), \"+r\"(c1) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
    "    d0 = (unsigned short)c0, d1 = (unsigned short)(c0 >> 16), d2 = (unsigned short)c1, d3 = (unsigned short)(c1 >> 16);\n"
    "}\n"
    "/* m16n8k8: a 2 x b32 (4 halves), b 1 x b32 */\n"
    "static __device__ __forceinline__ void tsl_mma_k8_f16(float &d0, float &d1, float &d2, float &d3, unsigned a0,\n"
    "                                                      unsigned a1, unsigned b0) {\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\\n\"\n"
    "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3) : \"r\"(a0), \"r\"(a1), \"r\"(b0));\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mma_k8_bf16(float &d0, float &d1, float &d2, float &d3, unsigned a0,\n"
    "                                                       unsigned a1, unsigned b0) {\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\\n\"\n"
    "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3) : \"r\"(a0), \"r\"(a1), \"r\"(b0));\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mma_k8_f16_f16(unsigned short &d0, unsigned short &d1, unsigned short &d2,\n"
    "                                                          unsigned short &d3, unsigned a0, unsigned a1, unsigned b0) {\n"
    "    unsigned c0 = (unsigned)d0 | ((unsigned)d1 << 16), c1 = (unsigned)d2 | ((unsigned)d3 << 16);\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, {%0,%1};\\n\"\n"
    "                 : \"+r\"(c0), \"+r\"(c1) : \"r\"(a0), \"r\"(a1), \"r\"(b0));\n"
    "    d0 = (unsigned short)c0, d1 = (unsigned short)(c0 >> 16), d2 = (unsigned short)c1, d3 = (unsigned short)(c1 >> 16);\n"
    "}\n"
    "/* tf32: each f32 operand rounded by cvt.rna.tf32.f32 (the interpreter's target_tf32_rna), one a register */\n"
    "static __device__ __forceinline__ unsigned tsl_tf32(float x) {\n"
    "    unsigned r;\n"
    "    asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x));\n"
    "    return r;\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mma_tf32(float &d0, float &d1, float &d2, float &d3, float a0, float a1,\n"
    "                                                    float a2, float a3, float b0, float b1) {\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
    "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
    "                 : \"r\"(tsl_tf32(a0)), \"r\"(tsl_tf32(a1)), \"r\"(tsl_tf32(a2)), \"r\"(tsl_tf32(a3)), \"r\"(tsl_tf32(b0)),\n"
    "                   \"r\"(tsl_tf32(b1)));\n"
    "}\n"
    "#endif\n"
    "/* The dequantizing mma (sm80.c's mma.q rows, target/frags.h): d, the 32\n"
    " * f32 of a lane (rows 2t, 2t + 1 of Y's 8 x its 16 columns), += X . W. w:\n"
    " * the lane's 4 rows x 16 codes of BITS bits, row r at bit 16 BITS r; x01,\n"
    " * x23: X[g][4t .. 4t + 3] as f16 pairs. Per tile of two columns the roles\n"
    " * swap (W^T the hardware's A, X^T its B): prmt puts the columns' byte of\n"
    " * rows (0, 1) and of (2, 3) into bytes 0 and 2, lop3 under 0x6400 gives\n"
    " * each field's k pair 1024 + 2^(f BITS) q, one fma.f16x2 gives q (exact) */\n"
    "#ifndef TSL_EMULATE\n"
    "static __device__ __forceinline__ unsigned tsl_prmt(unsigned a, unsigned b, unsigned s) {\n"
    "    unsigned r;\n"
    "    asm(\"prmt.b32 %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(a), \"r\"(b), \"r\"(s));\n"
    "    return r;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned tsl_and_or(unsigned a, unsigned m, unsigned o) {\n"
    "    unsigned r;\n"
    "    asm(\"lop3.b32 %0, %1, %2, %3, 0xea;\" : \"=r\"(r) : \"r\"(a), \"r\"(m), \"r\"(o));\n"
    "    return r;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned tsl_hfma2(unsigned a, unsigned b, unsigned c) {\n"
    "    unsigned r;\n"
    "    asm(\"fma.rn.f16x2 %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(a), \"r\"(b), \"r\"(c));\n"
    "    return r;\n"
    "}\n"
    "#else\n"
    "static inline unsigned tsl_prmt(unsigned a, unsigned b, unsigned s) {\n"
    "    unsigned long long x = (unsigned long long)b << 32 | a;\n"
    "    unsigned d = 0;\n"
    "    for (int k = 0; k < 4; k++) d |= (unsigned)(x >> 8 * ((s >> 4 * k) & 7) & 0xff) << 8 * k;\n"
    "    return d;\n"
    "}\n"
    "static inline unsigned tsl_and_or(unsigned a, unsigned m, unsigned o) { return (a & m) | o; }\n"
    "static inline unsigned tsl_hfma2(unsigned a, unsigned b, unsigned c) {\n"
    "    unsigned r = 0;\n"
    "    for (int h = 0; h < 2; h++) {\n"
    "        float x = tsl_cvt_f16_f32((unsigned short)(a >> 16 * h)), y = tsl_cvt_f16_f32((unsigned short)(b >> 16 * h)),\n"
    "              z = tsl_cvt_f16_f32((unsigned short)(c >> 16 * h));\n"
    "        r |= (unsigned)tsl_cvt_f32_f16(x * y + z) << 16 * h;\n"
    "    }\n"
    "    return r;\n"
    "}\n"
    "#endif\n"
    "template <int BITS> static __device__ __forceinline__ void tsl_qmma(float *d, const unsigned *w, unsigned x01,\n"
    "                                                                    unsigned x23) {\n"
    "    const int FPB = 8 / BITS, RB = 2 * BITS; /* fields a byte, bytes a row */\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < 8; j++) {\n"
    "        unsigned a[4];\n"
    "#pragma unroll\n"
    "        for (int h = 0; h < 2; h++) {\n"
    "            const int col = 2 * j + h, by = col / FPB, f = col % FPB;\n"
    "            const int b0 = by, b1 = RB + by, b2 = 2 * RB + by, b3 = 3 * RB + by;\n"
    "            const unsigned m = ((1u << BITS) - 1u) << (f * BITS), mm = m | m << 16;\n"
    "            /* 2^(-f BITS) and -1024 2^(-f BITS), f16 pairs (f BITS <= 7) */\n"
    "            const unsigned sc = 0x3c00u - ((unsigned)(f * BITS) << 10);\n"
    "            const unsigned s = sc * 0x10001u, o = (sc + (10u << 10)) * 0x10001u | 0x80008000u;\n"
    "            unsigned p01 = tsl_prmt(w[b0 / 4], w[b1 / 4], (b0 % 4) | (4 + b1 % 4) << 8);\n"
    "            unsigned p23 = tsl_prmt(w[b2 / 4], w[b3 / 4], (b2 % 4) | (4 + b3 % 4) << 8);\n"
    "            a[h] = tsl_hfma2(tsl_and_or(p01, mm, 0x64006400u), s, o);\n"
    "            a[2 + h] = tsl_hfma2(tsl_and_or(p23, mm, 0x64006400u), s, o);\n"
    "        }\n"
    "#ifndef TSL_EMULATE\n"
    "        asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, \"\n"
    "                     \"{%0,%1,%2,%3};\\n\"\n"
    "                     : \"+f\"(d[2 * j]), \"+f\"(d[16 + 2 * j]), \"+f\"(d[2 * j + 1]), \"+f\"(d[17 + 2 * j])\n"
    "                     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(x01), \"r\"(x23));\n"
    "#else\n"
    "        tsl_mma_f16(d[2 * j], d[16 + 2 * j], d[2 * j + 1], d[17 + 2 * j], a[0], a[1], a[2], a[3], x01, x23);\n"
    "#endif\n"
    "    }\n"
    "}\n"
    "\n"
    "/* 16-bit floats as bits (no headers needed: NVRTC alone compiles this) */\n"
    "struct __align__(2) tsl_f16 { unsigned short x; };\n"
    "struct __align__(2) tsl_bf16 { unsigned short x; };\n"
    "\n"
    "/* values as numbers: float for f16/bf16/f32, double otherwise */\n"
    "static __device__ __forceinline__ float tsl_c(tsl_f16 h) { return tsl_cvt_f16_f32(h.x); }\n"
    "static __device__ __forceinline__ float tsl_c(tsl_bf16 h) { return __uint_as_float((unsigned)h.x << 16); }\n"
    "static __device__ __forceinline__ float tsl_c(float x) { return x; }\n"
    "static __device__ __forceinline__ double tsl_c(double x) { return x; }\n"
    "#define TSL_CI(T) static __device__ __forceinline__ double tsl_c(T x) { return (double)x; }\n"
    "TSL_CI(signed char) TSL_CI(short) TSL_CI(int) TSL_CI(long long) TSL_CI(unsigned char)\n"
    "TSL_CI(unsigned short) TSL_CI(unsigned int) TSL_CI(unsigned long long) TSL_CI(bool)\n"
    "/* numbers to storage, rounding as the interpreter does */\n"
    "/* a double as a bits-bit integer (docs/language.md): truncated toward\n"
    " * zero, saturated to the type's range, NaN 0 (base/dtype.c to_int_sat) */\n"
    "static __device__ __forceinline__ long long tsl_sat(double x, int bits, bool sgn) {\n"
    "    if (x != x) return 0;\n"
    "    double lim = ldexp(1.0, sgn ? bits - 1 : bits);\n"
    "    if (x >= lim) return sgn ? (long long)(~0ull >> (65 - bits)) : (long long)(~0ull >> (64 - bits));\n"
    "    if (sgn ? x <= -lim : x <= -1.0) return sgn ? (long long)(~0ull << (bits - 1)) : 0;\n"
    "    return sgn ? (long long)x : (long long)(unsigned long long)x;\n"
    "}\n"
    "template <typename T> struct tsl_to {\n"
    "    static __device__ __forceinline__ T f(double x) { return (T)(unsigned long long)tsl_sat(x, 8 * (int)sizeof(T), (T)-1 < (T)0); }\n"
    "    static __device__ __forceinline__ T f(long long x) { return (T)(unsigned long long)x; }\n"
    "};\n"
    "template <> struct tsl_to<tsl_f16> {\n"
    "    static __device__ __forceinline__ tsl_f16 f(float x) { tsl_f16 h; h.x = tsl_cvt_f32_f16(x); return h; }\n"
    "    static __device__ __forceinline__ tsl_f16 f(double x) { return f((float)x); }\n"
    "    static __device__ __forceinline__ tsl_f16 f(long long x) { return f((float)x); }\n"
    "};\n"
    "template <> struct tsl_to<tsl_bf16> {\n"
    "    static __device__ __forceinline__ tsl_bf16 f(float x) { tsl_bf16 h; h.x = tsl_cvt_f32_bf16(x); return h; }\n"
    "    static __device__ __forceinline__ tsl_bf16 f(double x) { return f((float)x); }\n"
    "    static __device__ __forceinline__ tsl_bf16 f(long long x) { return f((float)x); }\n"
    "};\n"
    "template <> struct tsl_to<float> {\n"
    "    static __device__ __forceinline__ float f(float x) { return x; }\n"
    "    static __device__ __forceinline__ float f(double x) { return (float)x; }\n"
    "    static __device__ __forceinline__ float f(long long x) { return (float)x; }\n"
    "};\n"
    "template <> struct tsl_to<double> {\n"
    "    static __device__ __forceinline__ double f(double x) { return x; }\n"
    "    static __device__ __forceinline__ double f(long long x) { return (double)x; }\n"
    "};\n"
    "template <> struct tsl_to<bool> {\n"
    "    static __device__ __forceinline__ bool f(double x) { return x != 0; }\n"
    "    static __device__ __forceinline__ bool f(long long x) { return x != 0; }\n"
    "};\n"
    "/* i1..i7 / u1..u7 registers: the element's bit pattern in a byte */\n"
    "template <int B, int S> struct tsl_lb { unsigned char v; };\n"
    "template <int B, int S> static __device__ __forceinline__ double tsl_c(tsl_lb<B, S> x) {\n"
    "    long long u = x.v & ((1 << B) - 1);\n"
    "    return (double)((S && ((u >> (B - 1)) & 1)) ? u - (1LL << B) : u);\n"
    "}\n"
    "template <int B, int S> struct tsl_to<tsl_lb<B, S> > {\n"
    "    static __device__ __forceinline__ tsl_lb<B, S> f(double x) {\n"
    "        tsl_lb<B, S> r;\n"
    "        r.v = (unsigned char)((unsigned long long)tsl_sat(x, B, S) & ((1u << B) - 1));\n"
    "        return r;\n"
    "    }\n"
    "    static __device__ __forceinline__ tsl_lb<B, S> f(long long x) {\n"
    "        tsl_lb<B, S> r;\n"
    "        r.v = (unsigned char)((unsigned long long)x & ((1u << B) - 1));\n"
    "        return r;\n"
    "    }\n"
    "};\n"
    "/* the low-bit float conversion, the same text tessel compiles (base/lowbit_conv.h) */\n"
    TSL_LOWBIT_STR(TSL_LOWBIT_CONV_SRC(static __device__ __forceinline__)) "\n"
    "/* fma on f16/bf16 in the host emulation, the same text tessel compiles (base/fma16.h) */\n"
    TSL_FMA16_STR(TSL_FMA16_SRC(static __device__ __forceinline__)) "\n"
    "/* integer values as long long (integer elementwise math) */\n"
    "#define TSL_II(T) static __device__ __forceinline__ long long tsl_i(T x) { return (long long)x; }\n"
    "TSL_II(signed char) TSL_II(short) TSL_II(int) TSL_II(long long) TSL_II(unsigned char)\n"
    "TSL_II(unsigned short) TSL_II(unsigned int) TSL_II(unsigned long long) TSL_II(bool)\n"
    "template <int B, int S> static __device__ __forceinline__ long long tsl_i(tsl_lb<B, S> x) { return (long long)tsl_c(x); }\n"
    "/* |x| of a sign-extended 8/16-bit value, in 64 bits behind an opaque\n"
    " * instruction: NVVM narrows a plain 64-bit abs to abs.s16, whose result\n"
    " * for -32768 is left to the machine, and drops the sign extension after\n"
    " * it (abs(int16(-32768)) % 3 gave 2 on the H100, the definition -2) */\n"
    "static __device__ __forceinline__ long long tsl_iabs_narrow(long long x) {\n"
    "#ifdef TSL_EMULATE\n"
    "    return x < 0 ? -x : x;\n"
    "#else\n"
    "    long long r;\n"
    "    asm(\"abs.s64 %0, %1;\" : \"=l\"(r) : \"l\"(x));\n"
    "    return r;\n"
    "#endif\n"
    "}\n"
    "/* int scalars: floor division and modulo, as the tile IR defines them */\n"
    "template <typename I> static __device__ __forceinline__ I tsl_fdiv(I a, I b) {\n"
    "    I q = a / b;\n"
    "    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
    "}\n"
    "template <typename I> static __device__ __forceinline__ I tsl_fmod(I a, I b) {\n"
    "    I r = a % b;\n"
    "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
    "}\n"
    "/* ceiling division from the truncating quotient, with no negation: ptxas\n"
    " * 13.0 folded the old -floor(-a / b) into a three-way VIMNMX3 minimum\n"
    " * without its sign (min(x, cdiv(k, 128), y) took -cdiv), so a split count\n"
    " * read 1 in one kernel and 2 in its partner (docs/codegen.md) */\n"
    "template <typename I> static __device__ __forceinline__ I tsl_cdiv(I a, I b) {\n"
    "    I q = a / b;\n"
    "    return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q;\n"
    "}\n"
    "/* x behind an instruction the compiler may neither hoist out of a loop\n"
    " * nor merge with another: what is derived from it is computed where it\n"
    " * is used (a copy's edge path) rather than held in registers */\n"
    "#ifdef TSL_EMULATE\n"
    "template <typename I> static __device__ __forceinline__ I tsl_opaque(I x) { return x; }\n"
    "#else\n"
    "static __device__ __forceinline__ int tsl_opaque(int x) { asm volatile(\"mov.b32 %0, %0;\" : \"+r\"(x)); return x; }\n"
    "static __device__ __forceinline__ long long tsl_opaque(long long x) { asm volatile(\"mov.b64 %0, %0;\" : \"+l\"(x)); return x; }\n"
    "#endif\n"
    "template <typename I> static __device__ __forceinline__ I tsl_min(I a, I b) { return a < b ? a : b; }\n"
    "template <typename I> static __device__ __forceinline__ I tsl_max(I a, I b) { return a > b ? a : b; }\n"
    "/* float max / min: IEEE 754-2019 maximumNumber / minimumNumber, as the\n"
    " * interpreter (base.h dtype_max_num): a NaN operand is ignored, -0 < +0.\n"
    " * PTX max.f32 / min.f32 (fmaxf, fminf) compute exactly that, in one FMNMX\n"
    " * where a compare and select takes an FSETP and an FSEL; the host emulation\n"
    " * spells it out (the C library's fmaxf leaves the zero's sign open) */\n"
    "#ifdef TSL_EMULATE\n"
    "#define TSL_MAXN(f, x, y) (x > y || y != y || (x == y && signbit(y)) ? x : y)\n"
    "#define TSL_MINN(f, x, y) (x < y || y != y || (x == y && !signbit(y)) ? x : y)\n"
    "#else\n"
    "#define TSL_MAXN(f, x, y) f(x, y)\n"
    "#define TSL_MINN(f, x, y) f(x, y)\n"
    "#endif\n"
    "static __device__ __forceinline__ float tsl_maxnf(float x, float y) { return TSL_MAXN(fmaxf, x, y); }\n"
    "static __device__ __forceinline__ float tsl_minnf(float x, float y) { return TSL_MINN(fminf, x, y); }\n"
    "static __device__ __forceinline__ double tsl_maxn(double x, double y) { return TSL_MAXN(fmax, x, y); }\n"
    "static __device__ __forceinline__ double tsl_minn(double x, double y) { return TSL_MINN(fmin, x, y); }\n"
    "/* Swizzle<B,M,S> on an element offset (layout.h) */\n"
    "template <int B, int M, int S, typename I> static __device__ __forceinline__ I tsl_swz(I x) {\n"
    "    if (S >= 0) return x ^ ((x & ((I)((1 << B) - 1) << (M + (S >= 0 ? S : 0)))) >> (S >= 0 ? S : 0));\n"
    "    return x ^ ((x & ((I)((1 << B) - 1) << M)) << (S < 0 ? -S : 0));\n"
    "}\n"
    "/* bits of a value, and back (view, shuffles) */\n"
    "template <typename T> static __device__ __forceinline__ unsigned long long tsl_bits(T x) {\n"
    "    union { T t; unsigned long long u; } v;\n"
    "    v.u = 0;\n"
    "    v.t = x;\n"
    "    return v.u;\n"
    "}\n"
    "template <typename T> static __device__ __forceinline__ T tsl_from_bits(unsigned long long u) {\n"
    "    union { T t; unsigned long long u; } v;\n"
    "    v.u = u;\n"
    "    return v.t;\n"
    "}\n"
    "template <typename T> static __device__ __forceinline__ T tsl_shfl(T x, int src, unsigned mask) {\n"
    "    if (sizeof(T) <= 4) {\n"
    "        unsigned u = (unsigned)tsl_bits(x);\n"
    "        return tsl_from_bits<T>(__shfl_sync(mask, u, src));\n"
    "    }\n"
    "    return tsl_from_bits<T>((unsigned long long)__shfl_sync(mask, (long long)tsl_bits(x), src));\n"
    "}\n"
    "/* lanes of this thread's warp that exist in a block of n threads */\n"
    "static __device__ __forceinline__ unsigned tsl_warp_mask(int n, int base) {\n"
    "    return n - base >= 32 ? 0xffffffffu : ((1u << (n - base)) - 1u);\n"
    "}\n"
    "/* gather/scatter indices, and the first out-of-range index of a launch */\n"
    "static __device__ __forceinline__ long long tsl_index(float v) { return v != v ? -1 : (long long)v; }\n"
    "static __device__ __forceinline__ long long tsl_index(double v) { return v != v ? -1 : (long long)v; }\n"
    "static __device__ __forceinline__ void tsl_report(unsigned long long *err, int param, int dim, long long idx, long long tid) {\n"
    "    if (atomicCAS(err, 0ull, 1ull) == 0ull) {\n"
    "        err[1] = (unsigned long long)param;\n"
    "        err[2] = (unsigned long long)dim;\n"
    "        err[3] = (unsigned long long)idx;\n"
    "        err[4] = (unsigned long long)tid;\n"
    "        err[5] = blockIdx.x;\n"
    "        err[6] = blockIdx.y;\n"
    "        err[7] = blockIdx.z;\n"
    "    }\n"
    "}\n"
    "/* wide accesses: 4, 8 or 16 bytes, elements at bit offsets. The 8- and\n"
    " * 16-byte words are 32-bit registers, as the hardware has them: a field\n"
    " * of a 64-bit integer's high half stayed a 64-bit shift, and NVVM did not\n"
    " * see that bytes split out of a load and packed again are the loaded word\n"
    " * (30 instructions of 444 a step of the tensor-core GEMV's loop). */\n"
    "struct __align__(8) tsl_u64 { unsigned w[2]; };\n"
    "struct __align__(16) tsl_u128 { unsigned w[4]; };\n"
    "template <typename V> static __device__ __forceinline__ V tsl_vzero() { V v; v = (V)0; return v; }\n"
    "template <> __device__ __forceinline__ tsl_u64 tsl_vzero<tsl_u64>() { tsl_u64 v; v.w[0] = v.w[1] = 0; return v; }\n"
    "template <> __device__ __forceinline__ tsl_u128 tsl_vzero<tsl_u128>() {\n"
    "    tsl_u128 v;\n"
    "    v.w[0] = v.w[1] = v.w[2] = v.w[3] = 0;\n"
    "    return v;\n"
    "}\n"
    "/* bits at .. at + n - 1 (n <= 64) of words w[0..N-1], low word first */\n"
    "template <int N> static __device__ __forceinline__ unsigned long long tsl_vget_w(const unsigned (&w)[N], int at, int n) {\n"
    "    const int i = at >> 5, s = at & 31;\n"
    "    if (s + n <= 32) return (w[i] >> s) & (n >= 32 ? ~0u : ((1u << n) - 1));\n"
    "    unsigned long long v = ((unsigned long long)(i + 1 < N ? w[i + 1] : 0u) << 32 | w[i]) >> s;\n"
    "    if (s + n > 64 && i + 2 < N) v |= (unsigned long long)w[i + 2] << (64 - s);\n"
    "    return v & (n >= 64 ? ~0ull : ((1ull << n) - 1));\n"
    "}\n"
    "template <int N> static __device__ __forceinline__ void tsl_vset_w(unsigned (&w)[N], unsigned long long b, int at) {\n"
    "    const int i = at >> 5, s = at & 31;\n"
    "    w[i] |= (unsigned)(b << s);\n"
    "    if (i + 1 < N) w[i + 1] |= (unsigned)(s ? b >> (32 - s) : b >> 32);\n"
    "    if (s && i + 2 < N) w[i + 2] |= (unsigned)(b >> (64 - s));\n"
    "}\n"
    "static __device__ __forceinline__ unsigned long long tsl_vget(unsigned w, int at, int n) {\n"
    "    return ((unsigned long long)w >> at) & (n >= 64 ? ~0ull : ((1ull << n) - 1));\n"
    "}\n"
    "static __device__ __forceinline__ unsigned long long tsl_vget(const tsl_u64 &w, int at, int n) { return tsl_vget_w(w.w, at, n); }\n"
    "static __device__ __forceinline__ unsigned long long tsl_vget(const tsl_u128 &w, int at, int n) { return tsl_vget_w(w.w, at, n); }\n"
    "static __device__ __forceinline__ void tsl_vset(unsigned &w, unsigned long long b, int at) { w |= (unsigned)(b << at); }\n"
    "static __device__ __forceinline__ void tsl_vset(tsl_u64 &w, unsigned long long b, int at) { tsl_vset_w(w.w, b, at); }\n"
    "static __device__ __forceinline__ void tsl_vset(tsl_u128 &w, unsigned long long b, int at) { tsl_vset_w(w.w, b, at); }\n"
    "/* two 16-bit values in one 32-bit register, low half first (mma fragments) */\n"
    "template <typename T> static __device__ __forceinline__ unsigned tsl_pack2(T lo, T hi) {\n"
    "    return (unsigned)tsl_bits(lo) | ((unsigned)tsl_bits(hi) << 16);\n"
    "}\n";

const char *cg_cuda_entry_name(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "tsl_cuda_%s", name);
    for (char *p = buf + 9; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    return buf;
}

/* The kernel parameter list (suffix "_" on names the body re-declares as
 * I). decl: 0 the call's arguments, 1 the body's parameters, 2 the
 * kernel's (tensor maps as __grid_constant__ values; the body takes them by
 * reference, so their address stays the parameter's). */
static void param_list(cg *c, strbuf *sb, int decl)
{
    const tile_kernel *k = c->k;
    int first = 1;
#define SEP() (first ? (first = 0, "") : ", ")
    for (int p = 0; p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        const char *n = cg_name(c, v);
        if (v->kind == TILE_V_SCALAR) {
            int fl = tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT;
            sb_printf(sb, "%s%s%s_", SEP(), decl ? (fl ? "double " : "long long ") : "", n);
            continue;
        }
        sb_printf(sb, "%s%s%s", SEP(), decl ? cg_mem_ctype(v->type.dt) : "", decl ? " *" : "");
        sb_puts(sb, n);
        for (int i = 0; i < v->type.rank; i++)
            sb_printf(sb, ", %s%s_d%d_, %s%s_s%d_", decl ? "long long " : "", n, i,
                      decl ? "long long " : "", n, i);
    }
    for (int s = 0; s < k->nsyms; s++)
        sb_printf(sb, "%s%s%s_", SEP(), decl ? "long long " : "", cg_name(c, k->syms[s]));
    /* where gather/scatter report an index out of range (cuda_run.c) */
    sb_printf(sb, "%s%stsl_err", SEP(), decl ? "unsigned long long *" : "");
    cg_cuda_tmap maps[CG_MAX_TMAPS];
    int nm = cg_cuda_tmaps(k, maps, CG_MAX_TMAPS);
    for (int i = 0; i < nm && i < CG_MAX_TMAPS; i++)
        sb_printf(sb, "%s%stsl_tm%d", SEP(),
                  decl == 2 ? "const __grid_constant__ tsl_tmap " : decl ? "const tsl_tmap &" : "", i);
#undef SEP
}

static tsl_status emit_kernel(cg *c)
{
    const tile_kernel *k = c->k;
    for (int p = 0; p < k->nparams; p++)
        if (k->params[p]->kind == TILE_V_TENSOR && cg_check_dtype(c, k->params[p])) return c->st;
    plan_block(c, k->body);
    if (c->st) return c->st;
    char entry[128];
    cg_cuda_entry_name(k->name, entry, sizeof entry);
    strbuf body = {0};
    strbuf *save = c->o;
    c->o = &body;
    c->ind = 1;
    emit_block(c, k->body);
    c->o = save;
    if (c->st) {
        sb_free(&body);
        return c->st;
    }
    strbuf pl = {0}, al = {0}, kl = {0};
    param_list(c, &pl, 1);
    param_list(c, &al, 0);
    param_list(c, &kl, 2);
    int hopper = cg_hopper_used(k);
    sb_printf(c->o, "/* kernel %s: grid(", k->name);
    for (int i = 0; i < k->ngrid; i++) {
        if (i) sb_puts(c->o, ", ");
        tile_print_expr(c->o, k->grid[i]);
    }
    sb_printf(c->o, ") threads(%d); dynamic shared memory: %lld bytes of allocations + %lld bytes of scratch */\n",
              k->threads, (long long)c->smem, (long long)c->scratch);
    /* the scratch area: one per warpgroup instance (cuda_hopper.c) */
    sb_printf(c->o, "#undef TSL_SCRATCH_BASE\n#undef TSL_SCRATCH_SIZE\n#define TSL_SCRATCH_BASE %lld\n"
                    "#define TSL_SCRATCH_SIZE %lld\n",
              (long long)((c->smem + 15) / 16 * 16), (long long)((c->scratch + 15) / 16 * 16));
    sb_printf(c->o, "template <typename I>\nstatic __device__ __forceinline__ void tsl_body_%s(%s)\n{\n",
              entry, sb_str(&pl));
    sb_puts(c->o, "    TSL_SMEM_DECL;\n");
    sb_puts(c->o, "    unsigned char *const tsl_scr = tsl_smem + TSL_SCRATCH_BASE; (void)tsl_scr;\n");
    sb_puts(c->o, "    const I tid = (I)threadIdx.x;\n");
    sb_puts(c->o, "    (void)tid; (void)tsl_err;\n");
    for (int p = 0; p < k->nparams; p++) {
        const tile_value *v = k->params[p];
        const char *n = cg_name(c, v);
        if (v->kind == TILE_V_SCALAR) {
            if (tile_value_is_typed_scalar(v))
                sb_printf(c->o, "    const double %s = (double)%s_; (void)%s;\n", n, n, n);
            else
                sb_printf(c->o, "    const I %s = (I)%s_; (void)%s;\n", n, n, n);
            continue;
        }
        for (int i = 0; i < v->type.rank; i++) {
            sb_printf(c->o, "    const I %s_d%d = (I)%s_d%d_; (void)%s_d%d;\n", n, i, n, i, n, i);
            sb_printf(c->o, "    const I %s_s%d = (I)%s_s%d_; (void)%s_s%d;\n", n, i, n, i, n, i);
        }
    }
    for (int s = 0; s < k->nsyms; s++) {
        const char *n = cg_name(c, k->syms[s]);
        sb_printf(c->o, "    const I %s = (I)%s_; (void)%s;\n", n, n, n);
    }
    sb_puts(c->o, sb_str(&body));
    sb_puts(c->o, "}\n\n");
    /* one variant per NVRTC compile: each doubles the compile time, and
     * the 64-bit one is needed only for sizes past 2^30 (CG_CUDA_INDEX64) */
    for (int v = 0; v < 2; v++) {
        sb_printf(c->o, "#if defined(TSL_EMULATE) || %sdefined(TSL_INDEX64)\n", v ? "" : "!");
        /* a cluster's size is the kernel's own (__cluster_dims__): a plain
         * launch with grid x a multiple of it runs it */
        char cl[80] = "";
        if (k->cluster > 1) snprintf(cl, sizeof cl, "\n#ifndef TSL_EMULATE\n__cluster_dims__(%d, 1, 1)\n#endif\n", k->cluster);
        sb_printf(c->o, "extern \"C\" __global__ void %s__launch_bounds__(%d, %d) %s_%s(%s)\n{\n", cl, k->threads,
                  k->min_blocks > 0 ? k->min_blocks : 1,
                  entry, v ? "i64" : "i32", sb_str(&kl));
        sb_printf(c->o, "    tsl_body_%s<%s>(%s);\n}\n#endif\n\n", entry, v ? "long long" : "int", sb_str(&al));
    }
    if (hopper) {
        /* no host emulation of warpgroups, barriers, TMA or wgmma: the
         * tile interpreter is their oracle */
        sb_free(&pl);
        sb_free(&al);
        sb_free(&kl);
        sb_free(&body);
        return TSL_OK;
    }
    /* host emulation entry (tests): params[i] points at argument i, as for
     * a driver launch; pointers arrive as 64-bit integers */
    sb_printf(c->o, "#ifdef TSL_EMULATE\nextern \"C\" void %s_emu(void **p)\n{\n    tsl_body_%s<long long>(", entry, entry);
    int i = 0;
    for (int q = 0; q < k->nparams; q++) {
        const tile_value *v = k->params[q];
        if (v->kind == TILE_V_SCALAR) {
            int fl = tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT;
            sb_printf(c->o, "%s*(%s *)p[%d]", i ? ", " : "", fl ? "double" : "long long", i);
            i++;
            continue;
        }
        sb_printf(c->o, "%s(%s *)*(unsigned long long *)p[%d]", i ? ", " : "", cg_mem_ctype(v->type.dt), i);
        i++;
        for (int r = 0; r < 2 * v->type.rank; r++, i++) sb_printf(c->o, ", *(long long *)p[%d]", i);
    }
    for (int q = 0; q < k->nsyms; q++, i++) sb_printf(c->o, "%s*(long long *)p[%d]", i ? ", " : "", i);
    sb_printf(c->o, "%s(unsigned long long *)*(unsigned long long *)p[%d]);\n}\n#endif\n", i ? ", " : "", i);
    sb_free(&pl);
    sb_free(&al);
    sb_free(&kl);
    sb_free(&body);
    return TSL_OK;
}

/* A copy of m with its pipelines expanded (a new arena; caller frees it). */
static tsl_status expanded_copy(const tile_module *m, tsl_diag *d, tsl_arena **ar, tile_module **out)
{
    *out = NULL;
    *ar = arena_create();
    char *text = tile_print(m);
    if (!text) return TSL_ERR_NOMEM;
    tsl_source src = {"<tile>", text};
    tsl_status st = tile_parse(*ar, &src, d, out);
    if (!st) st = tile_pipeline_expand(*out, NULL, 0, d);
    free(text);
    return st;
}

static int has_pipeline(const tile_block *b)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_PIPELINE) return 1;
        if (has_pipeline(s->body) || has_pipeline(s->els)) return 1;
    }
    return 0;
}

/* Shared by emit and smem_bytes: generate into *out (may be a scratch
 * strbuf), report the shared bytes. */
static tsl_status generate(const tile_module *m, const tile_kernel *k, strbuf *out, int64_t *smem,
                           cg_cuda_branches *br, tsl_diag *d)
{
    tsl_arena *ar = NULL;
    cg_cuda_branches scratch_br;
    memset(&scratch_br, 0, sizeof scratch_br);
    if (!br) br = &scratch_br;
    br->n = 0;
    /* the module selection annotates: the caller's (its atoms are the
     * choices this generator prints), or the expanded copy */
    tile_module *sm = (tile_module *)m;
    if (has_pipeline(k->body)) {
        tile_module *cm = NULL;
        tsl_status st = expanded_copy(m, d, &ar, &cm);
        if (st) {
            arena_free(ar);
            return st;
        }
        sm = cm;
        k = tile_module_find(cm, k->name);
        if (!k) {
            arena_free(ar);
            diag_error(d, TSL_ERR_INTERNAL, "cuda codegen: kernel lost in pipeline expansion");
            return TSL_ERR_INTERNAL;
        }
    }
    /* instruction selection (target/select.h), here until the compile
     * driver runs it between pipeline expansion and emission: a kernel
     * with Hopper instructions is sm_90a's, any other sm_80's (which every
     * later GPU runs) */
    tsl_status sel = target_select(sm, (tile_kernel *)k, cg_cuda_select_target(k), NULL, d);
    if (sel) {
        arena_free(ar);
        return sel;
    }
    cg c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.o = out;
    c.d = d;
    c.br = ar ? NULL : br; /* the expanded copy's conditions die with it */
    c.br_parent = -1;
    c.soff = malloc(sizeof *c.soff * (size_t)(k->nvalues + 1));
    if (!c.soff) {
        arena_free(ar);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    for (int i = 0; i < k->nvalues; i++) c.soff[i] = -1;
    c.threads = k->threads;
    sb_puts(out, prelude);
    if (cg_hopper_used(k)) sb_puts(out, cg_hopper_prelude);
    sb_puts(out, "\n");
    tsl_status st = emit_kernel(&c);
    if (smem) *smem = (c.smem + 15) / 16 * 16 + (c.scratch + 15) / 16 * 16 * cg_hopper_instances(k);
    free(c.soff);
    arena_free(ar);
    return st;
}

tsl_status cg_cuda_emit(const tile_module *m, const tile_kernel *k, strbuf *out, tsl_diag *d)
{
    return generate(m, k, out, NULL, NULL, d);
}

tsl_status cg_cuda_emit_branches(const tile_module *m, const tile_kernel *k, strbuf *out, cg_cuda_branches *br,
                                 tsl_diag *d)
{
    return generate(m, k, out, NULL, br, d);
}

const struct target *cg_cuda_select_target(const tile_kernel *k)
{
    return cg_sm90_needed(k) ? &target_sm90a : &target_sm80;
}

tsl_status cg_cuda_emit_info(const tile_module *m, const tile_kernel *k, strbuf *out, cg_cuda_branches *br,
                             int64_t *smem, tsl_diag *d)
{
    return generate(m, k, out, smem, br, d);
}

int64_t cg_cuda_smem_bytes(const tile_module *m, const tile_kernel *k, tsl_diag *d)
{
    strbuf sb = {0};
    int64_t n = 0;
    tsl_status st = generate(m, k, &sb, &n, NULL, d);
    sb_free(&sb);
    return st ? -1 : n;
}

int cg_cuda_branch_leaves(const cg_cuda_branches *br, unsigned *keys, int max)
{
    int count = 0;
    for (unsigned v = 0; v < (1u << br->n); v++) {
        /* the branches v's path reaches; v is a leaf's key when it sets no other */
        unsigned reached = 0;
        for (int b = 0; b < br->n; b++) {
            int p = br->parent[b];
            if (p < 0 || ((reached >> p & 1u) && (v >> p & 1u) == (unsigned)br->arm[b])) reached |= 1u << b;
        }
        if (v & ~reached) continue;
        if (count < max) keys[count] = v;
        count++;
    }
    return count;
}
