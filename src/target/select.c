/* select.c — instruction selection (select.h): every spec of a kernel gets
 * an atom of its target's table, or a located error.
 *
 * Requires a verified module. Guarantees, on TSL_OK: every load_global,
 * store_global, load_shared, store_shared, copy_async and mma outside a
 * decomposition names a row the target has and that fits it (the CUDA
 * fits below are the conditions under which cuda_instr.c prints the row);
 * every atom inside a decomposition names a row the target runs; every
 * micro-kernel request is the micro-kernel's pattern (ukr.c).
 *
 * The CUDA fits, each the exact condition of its printed form:
 *   ldmatrix rows with a CUDA helper (`cu`: x4, x2.trans)   a load_shared
 *       whose ldmatrix plan exists (frag.c: the m16n8k16 A / B fragment
 *       R.F, R's threads the warps) from a 16-bit shared tensor whose
 *       8-element rows are contiguous and 16-byte aligned for every warp,
 *       tile slot, lane and anchor the view's offsets allow;
 *   {ld,st}.{global,shared} vectors of 16/8/4 bytes: groups of v
 *       consecutive locals are v consecutive elements of the last dim (and
 *       in shared memory v-aligned consecutive offsets for every thread and
 *       anchor); global accesses are also checked for bounds and alignment
 *       at run time, element by element where that fails;
 *   cp.async 16 (.cg) / 8, 4 (.ca): the chunk's elements are consecutive
 *       and aligned in shared memory for every tile-aligned anchor, equal
 *       dtypes, chunks dividing the row;
 *   mma.sync rows with a CUDA helper (m16n8k16 f32.{f16,bf16}) of the
 *       operands' dtypes whose mma plan exists (frag.c: operands R.F with
 *       R's threads the warps, every warp holding at the same slots the A
 *       and B tiles its C tiles need). m16n8k8 and f16-accumulator rows
 *       have no helper yet: they go to scalar.mma until the generator
 *       prints them.
 * Anything else takes the table's scalar fallback, written into the IR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/select.h"
#include "tile/decomp.h"

_Static_assert(TARGET_SP_GLOBAL == 1u << TILE_GLOBAL && TARGET_SP_SHARED == 1u << TILE_SHARED &&
                   TARGET_SP_REGISTER == 1u << TILE_REGISTER,
               "target spaces follow tile_space");

#define SEL_MAX_RANK 8
#define SEL_ANY ((int64_t)1 << 30)

static int dt_of(tile_dtype dt)
{
    tsl_dtype t;
    return tile_dtype_to_tsl(dt, &t) ? TARGET_DT_ANY : (int)t;
}

static const tile_value *reg_operand(const tile_operand *o)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_REGISTER || o->nsteps) return NULL;
    return o->v;
}

/* The register tensor a transfer reads or writes (its result or `-> R`). */
static const tile_value *transfer_reg(const tile_instr *in, int load)
{
    if (!load) return in->nargs ? reg_operand(&in->args[0]) : NULL;
    if (in->result) return in->result->type.space == TILE_REGISTER ? in->result : NULL;
    return in->has_dst ? reg_operand(&in->dst) : NULL;
}

target_query target_query_of(const tile_instr *in);
target_query target_query_of(const tile_instr *in)
{
    target_query q = target_query_any();
    q.op = tile_op_target(in->op);
    if (in->op == TILE_I_COPY_ASYNC) q.bytes = in->bytes ? (int)in->bytes : 16;
    if ((in->op == TILE_I_MMA || in->op == TILE_I_WGMMA) && in->nargs == 3) {
        if (in->args[0].v) q.dtype[TARGET_A] = q.dtype[TARGET_B] = dt_of(in->args[0].v->type.dt);
        if (in->op == TILE_I_MMA && in->args[1].v) /* a low-bit B: the dequantizing rows */
            q.dtype[TARGET_B] = target_mma_bdt(q.dtype[TARGET_A], dt_of(in->args[1].v->type.dt));
        if (in->args[2].v) q.dtype[TARGET_C] = q.dtype[TARGET_D] = dt_of(in->args[2].v->type.dt);
    }
    return q;
}

const target_atom *target_atom_of(const tile_instr *in)
{
    if (!in->atom) return NULL;
    target_query q = target_query_of(in);
    return target_atom_resolve(in->atom, &q, NULL);
}

/* ---- register tensors and views, as the generators address them ------------------------ */

/* coordinate(t, l)[d] = tpart(t, d) + lc[l * rank + d] (cg_rinfo) */
typedef struct sel_reg {
    const tile_value *v;
    const dist_layout *L;
    int rank, lead;
    int64_t dims[SEL_MAX_RANK];
    int64_t threads, locals;
    int64_t *lc;
    int64_t t0[DIST_MAX_RANK]; /* coordinate of (0, 0) */
} sel_reg;

/* 0 when v is a register tensor its layout covers exactly over the
 * `threads` the instruction runs on (the CUDA generator's requirement). */
static int reg_info(int threads, const tile_value *v, sel_reg *r)
{
    memset(r, 0, sizeof *r);
    if (!v || v->type.space != TILE_REGISTER || !v->type.layout || v->type.layout->v.kind != LAYOUT_VALUE_DIST) return -1;
    const dist_layout *L = &v->type.layout->v.dist;
    r->v = v;
    r->L = L;
    r->rank = v->type.rank;
    r->lead = L->rank - r->rank;
    r->threads = L->threads;
    r->locals = L->locals;
    if (r->rank > SEL_MAX_RANK || r->lead < 0 || r->threads != threads) return -1;
    for (int i = 0; i < r->rank; i++)
        if (!tile_expr_const(v->type.dims[i], &r->dims[i])) return -1;
    for (int i = 0; i < L->rank; i++)
        if (L->shape[i] != (i < r->lead ? 1 : r->dims[i - r->lead])) return -1;
    r->lc = calloc((size_t)(r->locals * (r->rank ? r->rank : 1)), sizeof *r->lc);
    if (!r->lc) return -1;
    int64_t full[DIST_MAX_RANK];
    for (int64_t l = 0; l < r->locals; l++) {
        dist_layout_map(L, 0, l, full);
        for (int d = 0; d < r->rank; d++) r->lc[l * r->rank + d] = full[r->lead + d];
    }
    dist_layout_map(L, 0, 0, r->t0);
    return 0;
}

static int64_t reg_tpart(const sel_reg *r, int64_t t, int d)
{
    int64_t full[DIST_MAX_RANK];
    dist_layout_map(r->L, t, 0, full);
    return full[r->lead + d] - r->t0[r->lead + d];
}

/* A global or shared operand: its tensor, rank, per-dim tile extent (-1
 * untiled). 0, or -1 for a view the generators do not take outside a
 * decomposition. */
typedef struct sel_view {
    const tile_value *v;
    int rank;
    int64_t ext[SEL_MAX_RANK];
} sel_view;

static int view_of(const tile_operand *o, sel_view *w)
{
    memset(w, 0, sizeof *w);
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.rank > SEL_MAX_RANK) return -1;
    w->v = o->v;
    w->rank = o->v->type.rank;
    int tiled = 0;
    int64_t psize[SEL_MAX_RANK];
    for (int i = 0; i < w->rank; i++) w->ext[i] = -1, psize[i] = 1;
    for (int s = 0; s < o->nsteps; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_LOCAL || st->n > w->rank) return -1;
        if (st->kind == TILE_STEP_TILE) {
            tiled = 1;
            for (int i = 0; i < w->rank; i++) {
                int j = i - (w->rank - st->n);
                psize[i] = j >= 0 ? st->sizes[j] : 1;
            }
            continue;
        }
        if (tiled)
            for (int i = 0; i < w->rank; i++) w->ext[i] = psize[i];
        tiled = 0;
    }
    return tiled ? -1 : 0;
}

static int shared_dims(const tile_value *v, int64_t *dims)
{
    for (int i = 0; i < v->type.rank; i++)
        if (!tile_expr_const(v->type.dims[i], &dims[i])) return -1;
    return 0;
}

static int64_t shared_off(const tile_value *v, const int64_t *dims, const int64_t *co)
{
    if (!v->type.layout) {
        int64_t e = 0;
        for (int i = 0; i < v->type.rank; i++) e = e * dims[i] + co[i];
        return e;
    }
    return layout_eval_coord(&v->type.layout->v.data, co, v->type.rank);
}

/* Largest power of two (capped) known to divide e; SEL_ANY for 0. */
static int64_t expr_mult(const tile_expr *e)
{
    int64_t a, b;
    switch (e->kind) {
    case TILE_E_INT:
        if (!e->i) return SEL_ANY;
        a = 1;
        while (a < SEL_ANY && (e->i % (a * 2)) == 0) a *= 2;
        return a;
    case TILE_E_NEG: return expr_mult(e->a);
    case TILE_E_BIN:
        a = expr_mult(e->a);
        b = expr_mult(e->b);
        if (e->op == TILE_OP_MUL) return a >= SEL_ANY || b >= SEL_ANY ? SEL_ANY : (a * b < SEL_ANY ? a * b : SEL_ANY);
        if (e->op == TILE_OP_ADD || e->op == TILE_OP_SUB) return a < b ? a : b;
        return 1;
    default: return 1;
    }
}

/* Per view dim, a power of two its offset is known to be a multiple of. */
static void view_mults(const tile_operand *o, int rank, int64_t *m)
{
    for (int i = 0; i < rank; i++) m[i] = SEL_ANY;
    int tiled = 0;
    int64_t psize[SEL_MAX_RANK];
    for (int s = 0; s < o->nsteps; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_TILE) {
            tiled = 1;
            for (int i = 0; i < rank; i++) {
                int j = i - (rank - st->n);
                psize[i] = j >= 0 ? st->sizes[j] : 1;
            }
            continue;
        }
        if (st->kind != TILE_STEP_INDEX) continue;
        for (int i = 0; i < rank && i < st->n; i++) {
            int64_t x = expr_mult(st->idx[i]);
            if (tiled && x < SEL_ANY) x = x * psize[i] < SEL_ANY ? x * psize[i] : SEL_ANY;
            if (x < m[i]) m[i] = x;
        }
        tiled = 0;
    }
}

/* ---- CUDA fits -------------------------------------------------------------------------------- */

/* Are groups of v consecutive locals v consecutive elements of dim vd
 * (and, in shared memory, v consecutive v-aligned offsets for every
 * thread and every anchor the offsets' known divisors allow)? Global
 * vectors run along the last dim; shared ones along any dim whose stride
 * is 1 (a column of a k-major block). */
static int vec_fits_dim(const sel_reg *ri, const sel_view *gv, const tile_operand *mo, int lead, int global, int64_t v,
                        int vd)
{
    int es = gv->v->type.dt.bits / 8, last = vd;
    if (ri->rank < 1 || !es || v < 2 || v * es < 4 || v * es > 16 || ri->locals % v) return 0;
    int64_t dims[SEL_MAX_RANK], m[SEL_MAX_RANK];
    if (!global && shared_dims(gv->v, dims)) return 0;
    view_mults(mo, gv->rank, m);
    for (int64_t l = 0; l < ri->locals; l++) {
        int64_t g = l - l % v;
        for (int d = 0; d < ri->rank; d++)
            if (ri->lc[l * ri->rank + d] != ri->lc[g * ri->rank + d] + (d == last ? l - g : 0)) return 0;
    }
    if (global) return 1;
    int64_t cnt[SEL_MAX_RANK], total = 1;
    for (int i = 0; i < gv->rank; i++) {
        int64_t ext = i >= lead ? ri->dims[i - lead] : 1, step = m[i] >= SEL_ANY ? dims[i] + 1 : m[i];
        cnt[i] = dims[i] >= ext ? (dims[i] - ext) / step + 1 : 0;
        total *= cnt[i];
    }
    if (!total || total * ri->threads * ri->locals > ((int64_t)1 << 22)) return 0;
    for (int64_t a = 0; a < total; a++) {
        int64_t anc[SEL_MAX_RANK], r = a;
        for (int i = gv->rank - 1; i >= 0; i--) {
            anc[i] = (r % cnt[i]) * (m[i] >= SEL_ANY ? 0 : m[i]);
            r /= cnt[i];
        }
        for (int64_t t = 0; t < ri->threads; t++)
            for (int64_t l = 0; l < ri->locals; l += v) {
                int64_t co[SEL_MAX_RANK];
                for (int i = 0; i < gv->rank; i++)
                    co[i] = anc[i] + (i >= lead ? reg_tpart(ri, t, i - lead) + ri->lc[l * ri->rank + i - lead] : 0);
                int64_t o0 = shared_off(gv->v, dims, co);
                if (o0 % v) return 0;
                for (int64_t j = 1; j < v; j++) {
                    co[lead + vd]++;
                    if (shared_off(gv->v, dims, co) != o0 + j) return 0;
                }
            }
    }
    return 1;
}

static int vec_fits(const sel_reg *ri, const sel_view *gv, const tile_operand *mo, int lead, int global, int64_t v)
{
    for (int vd = ri->rank - 1; vd >= (global ? ri->rank - 1 : 0); vd--)
        if (vec_fits_dim(ri, gv, mo, lead, global, v, vd)) return 1;
    return 0;
}

/* Rows of 8 contiguous, 16-byte aligned elements for every warp, tile slot,
 * anchor and lane that gives an address (the plan's rows). */
static int ldmatrix_rows_ok(const sel_reg *ri, const sel_view *gv, const tile_operand *mo, const target_atom *ld,
                            const target_ldmatrix_plan *p)
{
    int R = gv->rank, lead = R - 2;
    int64_t dims[SEL_MAX_RANK], m[SEL_MAX_RANK], cnt[SEL_MAX_RANK], total = 1;
    if (shared_dims(gv->v, dims)) return 0;
    view_mults(mo, R, m);
    for (int i = 0; i < R; i++) {
        int64_t ext = i >= lead ? ri->dims[i - lead] : 1, step = m[i] >= SEL_ANY ? dims[i] + 1 : m[i];
        cnt[i] = dims[i] >= ext ? (dims[i] - ext) / step + 1 : 0;
        total *= cnt[i];
    }
    if (!total || total * ri->threads * p->slots > ((int64_t)1 << 22)) return 0;
    for (int64_t a = 0; a < total; a++) {
        int64_t anc[SEL_MAX_RANK], r = a;
        for (int i = R - 1; i >= 0; i--) {
            anc[i] = (r % cnt[i]) * (m[i] >= SEL_ANY ? 0 : m[i]);
            r /= cnt[i];
        }
        for (int64_t w = 0; w < ri->threads; w += 32)
            for (int64_t sl = 0; sl < p->slots; sl++)
                for (int lane = 0; lane < 8 * ld->count; lane++) {
                    int64_t co[SEL_MAX_RANK];
                    for (int i = 0; i < lead; i++) co[i] = anc[i];
                    co[lead] = anc[lead] + reg_tpart(ri, w, 0) + ri->lc[sl * p->per * 2 + 0] + p->org[lane / 8][0] +
                               lane % 8;
                    co[lead + 1] = anc[lead + 1] + reg_tpart(ri, w, 1) + ri->lc[sl * p->per * 2 + 1] + p->org[lane / 8][1];
                    if (co[lead] >= dims[lead] || co[lead + 1] + 8 > dims[lead + 1]) return 0;
                    int64_t o0 = shared_off(gv->v, dims, co);
                    if (o0 % 8) return 0;
                    for (int j = 1; j < 8; j++) {
                        co[lead + 1]++;
                        if (shared_off(gv->v, dims, co) != o0 + j) return 0;
                    }
                }
    }
    return 1;
}

/* The ldmatrix row a block-level load_shared fits (kind LDMATRIX), or the
 * stmatrix row a store_shared fits (STMATRIX, sm_90), or NULL: the first
 * the target has and the CUDA generator prints whose plan exists and whose
 * rows are contiguous and aligned. */
static const target_atom *ldmatrix_fit(const target *t, target_kind kind, int threads, const sel_reg *ri,
                                       const sel_view *gv, const tile_operand *mo)
{
    if (ri->rank != 2 || gv->rank < 2 || ri->lead || gv->v->type.dt.bits != 16 ||
        !tile_dtype_eq(gv->v->type.dt, ri->v->type.dt) || threads % 32)
        return NULL;
    target_query q = target_query_any();
    q.op = kind == TARGET_K_LDMATRIX ? TARGET_OP_LD_SHARED : TARGET_OP_ST_SHARED;
    const target_atom *rows[16];
    int n = target_atom_find(t, kind, &q, rows, 16);
    for (int i = 0; i < n; i++) {
        target_ldmatrix_plan p;
        if (rows[i]->cu && !target_ldmatrix_plan_make(&p, rows[i], ri->L, threads) &&
            ldmatrix_rows_ok(ri, gv, mo, rows[i], &p))
            return rows[i];
    }
    return NULL;
}

/* Are the `vec` elements of every chunk consecutive and vec-aligned in
 * shared memory, for every tile-aligned anchor of the box in the tensor? */
static int chunks_contiguous(const tile_value *sv, const int64_t *dims, const int64_t *box, int rank, int64_t vec)
{
    int64_t npos[SEL_MAX_RANK], total = 1, n = 1;
    for (int i = 0; i < rank; i++) {
        npos[i] = box[i] <= dims[i] ? dims[i] / box[i] : 0;
        if (npos[i] == 0) return 0;
        total *= npos[i];
        n *= box[i];
    }
    if (total * n > (1 << 22)) return 0;
    for (int64_t a = 0; a < total; a++) {
        int64_t anc[SEL_MAX_RANK], r = a;
        for (int i = rank - 1; i >= 0; i--) {
            anc[i] = (r % npos[i]) * box[i];
            r /= npos[i];
        }
        for (int64_t e = 0; e < n; e += vec) {
            int64_t co[SEL_MAX_RANK], q = e;
            for (int i = rank - 1; i >= 0; i--) {
                co[i] = anc[i] + q % box[i];
                q /= box[i];
            }
            int64_t o0 = shared_off(sv, dims, co);
            if (o0 % vec) return 0;
            for (int64_t j = 1; j < vec; j++) {
                co[rank - 1]++;
                if (shared_off(sv, dims, co) != o0 + j) return 0;
            }
        }
    }
    return 1;
}

/* Does copy_async move `bytes`-byte chunks as cp.async (else element by element)? */
static int cp_async_fits(const tile_instr *in, int64_t bytes)
{
    sel_view src, dst;
    if (!in->has_dst || !in->nargs || view_of(&in->args[0], &src) || view_of(&in->dst, &dst)) return 0;
    const tile_value *gvv = src.v, *svv = dst.v;
    if (gvv->type.space != TILE_GLOBAL || svv->type.space != TILE_SHARED) return 0;
    int lead = in->dst.nsteps == 1 && in->dst.steps[0].kind == TILE_STEP_INDEX ? in->dst.steps[0].n : 0;
    int rank = dst.rank - lead;
    if (rank < 1 || src.rank < 1) return 0;
    int64_t dims[SEL_MAX_RANK], box[SEL_MAX_RANK], fullbox[SEL_MAX_RANK];
    if (shared_dims(svv, dims)) return 0;
    for (int i = 0; i < rank; i++) box[i] = dst.ext[lead + i] >= 0 ? dst.ext[lead + i] : dims[lead + i];
    for (int i = 0; i < dst.rank; i++) fullbox[i] = i < lead ? 1 : box[i - lead];
    int esz = svv->type.dt.bits / 8;
    if (!esz) return 0;
    int64_t vec = bytes / esz;
    return esz * vec == bytes && (bytes == 4 || bytes == 8 || bytes == 16) && box[rank - 1] % vec == 0 &&
           tile_dtype_eq(gvv->type.dt, svv->type.dt) && chunks_contiguous(svv, dims, fullbox, dst.rank, vec);
}

/* mma.sync through the fragments (cuda_instr.c prints the plan): 1 when
 * row is one the CUDA generator prints, of the operands' dtypes, and its
 * plan over their layouts exists. */
static int mma_fits(int threads, const tile_instr *in, const target_atom *row)
{
    const tile_value *a = reg_operand(&in->args[0]), *b = reg_operand(&in->args[1]), *c = reg_operand(&in->args[2]);
    const tile_value *d = transfer_reg(in, 1);
    if (!a || !b || !c || !d || !row->cu) return 0;
    if (dt_of(a->type.dt) != row->dtype[TARGET_A] || dt_of(b->type.dt) != row->dtype[TARGET_B] ||
        dt_of(c->type.dt) != row->dtype[TARGET_C] || dt_of(d->type.dt) != row->dtype[TARGET_D])
        return 0;
    sel_reg rs[4];
    int ok = !reg_info(threads, a, &rs[0]) && !reg_info(threads, b, &rs[1]) && !reg_info(threads, c, &rs[2]) &&
             !reg_info(threads, d, &rs[3]);
    for (int i = 0; ok && i < 4; i++)
        if (rs[i].rank != 2 || rs[i].lead) ok = 0;
    if (ok && !dist_layout_equal(rs[2].L, rs[3].L)) ok = 0;
    target_mma_plan p = {0};
    if (ok && target_mma_plan_make(&p, row, rs[0].L, rs[1].L, rs[2].L, threads)) ok = 0;
    if (ok && !p.uniform) ok = 0;
    target_mma_plan_free(&p);
    for (int i = 0; i < 4; i++) free(rs[i].lc);
    return ok;
}

/* ---- selection ------------------------------------------------------------------------------ */

typedef struct selector {
    const tile_module *m;
    tile_kernel *k;
    int threads; /* the threads an instruction runs on: the block's, or 128 inside a warpgroup role */
    const target *t;
    const tsl_source *src;
    tsl_diag *d;
    tile_decomp_visitor vis;
    tsl_status st;
} selector;

static tsl_status sel_err(selector *S, size_t pos, tsl_status st, const char *fmt, ...) TSL_PRINTF(4, 5);

static tsl_status sel_err(selector *S, size_t pos, tsl_status st, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (S->src) diag_error_at(S->d, S->src, pos, st, "%s", msg);
    else diag_error(S->d, st, "in kernel %s (target %s): %s", S->k->name, S->t->name, msg);
    if (!S->st) S->st = st;
    return st;
}

/* Is row a a CPU row on a CUDA target or a CUDA row on the CPU? */
static int foreign(const selector *S, const target_atom *a)
{
    return S->t->cuda ? a->sm == 0 : a->sm > 0;
}

static int is_transfer(tile_op op)
{
    return op == TILE_I_LOAD_GLOBAL || op == TILE_I_STORE_GLOBAL || op == TILE_I_LOAD_SHARED ||
           op == TILE_I_STORE_SHARED || op == TILE_I_COPY_ASYNC;
}

/* A CUDA row of kind `kind` implementing op (and `bytes`, 0: any). */
static const target_atom *cuda_row(const selector *S, target_kind kind, unsigned op, int bytes)
{
    target_query q = target_query_any();
    q.op = op;
    q.bytes = bytes;
    const target_atom *out = NULL;
    target_atom_find(S->t, kind, &q, &out, 1);
    return out;
}

/* What fits a transfer on CUDA, widest first; `want` (a named row) is
 * checked instead of chosen. NULL: nothing fits (with a reason). */
static const target_atom *cuda_transfer(selector *S, const tile_instr *in, const target_atom *want, const char **why)
{
    unsigned op = tile_op_target(in->op);
    *why = "";
    if (in->op == TILE_I_COPY_ASYNC) {
        /* the chunk asked for, else narrower ones (a transposing copy
         * moves 4-byte elements, still asynchronously) */
        for (int64_t bytes = in->bytes ? in->bytes : 16; bytes >= 4; bytes /= 2) {
            if (!cp_async_fits(in, bytes)) continue;
            const target_atom *a = cuda_row(S, TARGET_K_CP_ASYNC, op, (int)bytes);
            if (a && (!want || want == a)) return a;
        }
        if (want && want->kind != TARGET_K_SCALAR) {
            *why = "its chunks are not consecutive and aligned in shared memory for every anchor, or the dtypes differ";
            return NULL;
        }
        return cuda_row(S, TARGET_K_SCALAR, op, 0);
    }
    int load = in->op == TILE_I_LOAD_GLOBAL || in->op == TILE_I_LOAD_SHARED;
    int global = in->op == TILE_I_LOAD_GLOBAL || in->op == TILE_I_STORE_GLOBAL;
    const tile_operand *mo = load ? (in->nargs ? &in->args[0] : NULL) : (in->has_dst ? &in->dst : NULL);
    const tile_value *rv = transfer_reg(in, load);
    sel_reg ri;
    sel_view gv;
    const target_atom *got = NULL;
    if (mo && rv && !reg_info(S->threads, rv, &ri)) {
        if (!view_of(mo, &gv) && (int)gv.v->type.space == (global ? TILE_GLOBAL : TILE_SHARED) && gv.rank >= ri.rank) {
            int lead = gv.rank - ri.rank;
            if (!global)
                got = ldmatrix_fit(S->t, load ? TARGET_K_LDMATRIX : TARGET_K_STMATRIX, S->threads, &ri, &gv, mo);
            if (want && (want->kind == TARGET_K_LDMATRIX || want->kind == TARGET_K_STMATRIX) && got != want) {
                *why = "the register layout is not the mma fragment it moves, or its shared rows are not "
                       "contiguous and 16-byte aligned";
                got = NULL;
                free(ri.lc);
                return NULL;
            }
            if (!got && tile_dtype_eq(gv.v->type.dt, rv->type.dt)) {
                int es = gv.v->type.dt.bits / 8;
                const target_atom *rows[4];
                int n = es ? target_atom_find(S->t, TARGET_K_VEC, &(target_query){.op = op, .dtype = {-1, -1, -1, -1}},
                                              rows, 4)
                           : 0;
                for (int i = 0; i < n && !got; i++) {
                    if (rows[i]->bytes % es) continue;
                    if (want && want != rows[i]) continue;
                    if (vec_fits(&ri, &gv, mo, lead, global, rows[i]->bytes / es)) got = rows[i];
                }
            }
        }
        free(ri.lc);
    }
    if (got) return got;
    if (want && want->kind != TARGET_K_SCALAR) {
        *why = "groups of its locals are not consecutive elements of the last dim (aligned in shared memory), or the "
               "dtypes differ";
        return NULL;
    }
    return cuda_row(S, TARGET_K_SCALAR, op, 0);
}

/* The CPU runs every transfer as C loops. */
static const target_atom *cpu_copy(void)
{
    return target_atom_by_name("cpu.copy");
}

static void sel_set(tile_instr *in, const target_atom *a)
{
    /* a spelling that already names this row stays as written */
    if (in->atom && target_atom_of(in) == a) return;
    in->atom = a->name;
    /* a copy_async the selection narrowed moves the row's chunks */
    if (in->op == TILE_I_COPY_ASYNC && a->kind == TARGET_K_CP_ASYNC) in->bytes = a->bytes;
}

static void select_transfer(selector *S, tile_stmt *s)
{
    tile_instr *in = &s->instr;
    const char *op = tile_op_info_of(in->op)->name;
    const target_atom *want = NULL;
    if (in->atom) {
        int named = 0;
        target_query q = target_query_of(in);
        want = target_atom_resolve(in->atom, &q, &named);
        if (!named) {
            sel_err(S, s->pos, TSL_ERR_SEMANTIC, "%s: unknown atom '%s'", op, in->atom);
            return;
        }
        if (!want) {
            sel_err(S, s->pos, TSL_ERR_SEMANTIC, "%s: atom %s has no form for this instruction%s", op, in->atom,
                    in->op == TILE_I_COPY_ASYNC ? " and chunk size" : "");
            return;
        }
        if (foreign(S, want)) want = NULL; /* another target's transfer: choose again */
    }
    if (!S->t->cuda) {
        sel_set(in, cpu_copy());
        return;
    }
    if (want && !target_has(S->t, want)) {
        sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "%s: atom %s needs sm_%d%s; the target is %s", op, want->name, want->sm,
                want->sm_a ? "a" : "", S->t->name);
        return;
    }
    const char *why;
    const target_atom *a = cuda_transfer(S, in, want, &why);
    if (!a) {
        if (want) sel_err(S, s->pos, TSL_ERR_SEMANTIC, "%s: atom %s does not fit: %s", op, want->name, why);
        else sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "%s: no atom of %s fits", op, S->t->name);
        return;
    }
    sel_set(in, a);
}

static void select_mma(selector *S, tile_stmt *s)
{
    tile_instr *in = &s->instr;
    const tile_value *a = in->nargs == 3 ? reg_operand(&in->args[0]) : NULL,
                     *b = in->nargs == 3 ? reg_operand(&in->args[1]) : NULL,
                     *c = in->nargs == 3 ? reg_operand(&in->args[2]) : NULL;
    if (!a || !b || !c) return; /* the verifier's business */
    int named = 0;
    int bdt = target_mma_bdt(dt_of(a->type.dt), dt_of(b->type.dt)); /* a low-bit B: the dequantizing rows */
    const target_atom *row = target_mma_resolve_ab(in->atom, dt_of(a->type.dt), bdt, dt_of(c->type.dt), &named);
    if (!row) {
        sel_err(S, s->pos, TSL_ERR_SEMANTIC, "mma: %s atom '%s' for these dtypes", named ? "no" : "unknown",
                in->atom ? in->atom : "m16n8k16");
        return;
    }
    /* an alias or no atom names a shape; an exact row name is binding */
    int exact = in->atom && !strcmp(in->atom, row->name);
    target_query q = target_query_any();
    q.op = TARGET_OP_MMA;
    q.m = row->m, q.n = row->n, q.k = row->k;
    q.dtype[TARGET_A] = dt_of(a->type.dt);
    q.dtype[TARGET_B] = bdt;
    q.dtype[TARGET_C] = q.dtype[TARGET_D] = dt_of(c->type.dt);
    if (!S->t->cuda) {
        /* the C generator runs the fragments' semantics: the hardware row
         * of that shape (a CUDA fallback row is chosen again) */
        const target_atom *r = row;
        if (!target_has(S->t, r) && !target_atom_find(S->t, TARGET_K_MMA, &q, &r, 1)) {
            sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "mma: the CPU has no form of %s", row->name);
            return;
        }
        sel_set(in, r);
        return;
    }
    if (row->kind == TARGET_K_MMA && mma_fits(S->threads, in, row)) {
        sel_set(in, row);
        return;
    }
    if (exact && row->kind == TARGET_K_MMA && !row->cu) {
        sel_err(S, s->pos, TSL_ERR_UNAVAILABLE,
                "mma: atom %s: the CUDA generator does not print it yet (it prints the m16n8k16 rows with f32 "
                "accumulators)",
                row->name);
        return;
    }
    if (exact && row->kind == TARGET_K_MMA) {
        sel_err(S, s->pos, TSL_ERR_SEMANTIC,
                "mma: atom %s does not fit: the operands are not its fragments tiled over the warps (each warp holding "
                "the A and B tiles of its C tiles at the same slots) with f32 accumulators",
                row->name);
        return;
    }
    const target_atom *fb = NULL;
    target_atom_find(S->t, TARGET_K_SCALAR, &q, &fb, 1);
    if (!fb) {
        sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "mma: no atom of %s fits %s", S->t->name, row->name);
        return;
    }
    sel_set(in, fb);
}

static void select_acc_step(selector *S, tile_stmt *s, const tile_stmt *loop)
{
    tile_instr *in = &s->instr;
    int named = 0;
    const target_atom *a = target_atom_resolve(in->atom, NULL, &named);
    if (!a || a->kind != TARGET_K_UKR) {
        sel_err(S, s->pos, TSL_ERR_SEMANTIC, "add: %s atom '%s' (an add takes a cpu.ukr micro-kernel)",
                named ? "no add" : "unknown", in->atom);
        return;
    }
    if (!target_has(S->t, a)) {
        sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "add: atom %s is a CPU micro-kernel; the target is %s", a->name,
                S->t->name);
        return;
    }
    target_ukr u;
    char why[256];
    if (!loop || !target_ukr_match(S->k, loop, &u, why, sizeof why))
        sel_err(S, s->pos, TSL_ERR_SEMANTIC, "add: atom %s does not fit: %s", a->name,
                loop ? why : "it must end the body of a `for` loop");
}

/* wgmma and TMA (the Hopper instructions cuda_hopper.c prints): the row of
 * the instruction's shape (m64nNk16 for the accumulator's N and the
 * operands' dtypes; the box's rank), or an error when the target has none
 * (sm_80, or sm_90 without the `a`). */
static void select_hopper(selector *S, tile_stmt *s)
{
    tile_instr *in = &s->instr;
    const char *op = tile_op_info_of(in->op)->name;
    target_query q = target_query_any();
    q.op = tile_op_target(in->op);
    target_kind kind = in->op == TILE_I_WGMMA ? TARGET_K_WGMMA : TARGET_K_TMA;
    if (in->op == TILE_I_WGMMA) {
        const tile_value *b = in->nargs == 3 ? in->args[1].v : NULL, *c = in->nargs == 3 ? in->args[2].v : NULL;
        int64_t n;
        if (!b || !c || c->type.rank != 2 || !tile_expr_const(c->type.dims[1], &n)) return; /* the verifier's */
        q.n = (int)n;
        q.dtype[TARGET_A] = q.dtype[TARGET_B] = dt_of(b->type.dt);
        q.dtype[TARGET_C] = q.dtype[TARGET_D] = dt_of(c->type.dt);
    } else {
        const tile_operand *so = in->op == TILE_I_TMA_LOAD ? (in->has_dst ? &in->dst : NULL) : &in->args[0];
        if (!so || !so->v || so->v->kind != TILE_V_TENSOR) return;
        q.count = so->v->type.rank - (so->nsteps ? so->steps[0].n : 0);
        if (in->op == TILE_I_TMA_LOAD) q.mcast = in->mcast ? 2 : 1;
    }
    const target_atom *want = NULL;
    if (in->atom) {
        int named = 0;
        want = target_atom_resolve(in->atom, &q, &named);
        if (!want) {
            sel_err(S, s->pos, TSL_ERR_SEMANTIC, "%s: %s atom '%s' for this shape", op, named ? "no" : "unknown", in->atom);
            return;
        }
    }
    const target_atom *a = NULL;
    target_atom_find(S->t, kind, &q, &a, 1);
    if (want) a = target_has(S->t, want) ? want : NULL;
    if (!a) {
        const target_atom *any = want;
        if (!any) target_atom_find(&target_sm90a, kind, &q, &any, 1);
        if (any)
            sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "%s: the target %s has no %s (it needs sm_%d%s)", op, S->t->name,
                    any->name, any->sm, any->sm_a ? "a" : "");
        else
            sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "%s: no atom of any target has this shape", op);
        return;
    }
    sel_set(in, a);
}

/* ---- inside decompositions: the atoms must exist and run on the target ----------------- */

static tsl_status sv_ok(void *ctx, const tile_stmt *s)
{
    (void)ctx;
    (void)s;
    return TSL_OK;
}

static tsl_status sv_walk_arms(void *ctx, const tile_stmt *s)
{
    selector *S = ctx;
    tsl_status st = tile_decomp_walk(s->body, &S->vis);
    if (!st && s->els) st = tile_decomp_walk(s->els, &S->vis);
    return st;
}

static tsl_status sv_collective(void *ctx, const tile_stmt *s, const target_atom *a)
{
    selector *S = ctx;
    if (!target_has(S->t, a))
        return sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "atom %s does not run on %s", a->name, S->t->name);
    return TSL_OK;
}

static tsl_status sv_move(void *ctx, const tile_stmt *s, const target_atom *a)
{
    selector *S = ctx;
    if (a && S->t->cuda && a->sm > 0 && !target_has(S->t, a))
        return sel_err(S, s->pos, TSL_ERR_UNAVAILABLE, "atom %s needs sm_%d; the target is %s", a->name, a->sm,
                       S->t->name);
    return TSL_OK;
}

static tsl_status sv_fail(void *ctx, size_t pos, tsl_status st, const char *msg)
{
    return sel_err(ctx, pos, st, "%s", msg);
}

/* ---- the walk over the kernel ---------------------------------------------------------------- */

static void select_block(selector *S, tile_block *b, const tile_stmt *loop);

static void select_stmt(selector *S, tile_stmt *s, const tile_stmt *loop, int last)
{
    switch (s->kind) {
    case TILE_S_FOR: select_block(S, s->body, s); return;
    case TILE_S_IF:
        select_block(S, s->body, NULL);
        select_block(S, s->els, NULL);
        return;
    case TILE_S_WHILE:
    case TILE_S_PIPELINE: select_block(S, s->body, NULL); return;
    case TILE_S_WARPGROUPS: {
        /* a role's body runs on each 128-thread instance */
        int saved = S->threads;
        S->threads = 128;
        for (int r = 0; r < s->nroles; r++) select_block(S, s->roles[r].body, NULL);
        S->threads = saved;
        return;
    }
    case TILE_S_INSTR: break;
    default: return;
    }
    tile_instr *in = &s->instr;
    if (in->decomp) {
        tile_decomp_walk(in->decomp, &S->vis);
        /* the CUDA generator prints the outer instruction (it does not
         * lower decompositions yet): that needs an atom of its own */
        if (S->t->cuda && is_transfer(in->op)) select_transfer(S, s);
        return;
    }
    if (is_transfer(in->op)) select_transfer(S, s);
    else if (in->op == TILE_I_MMA) select_mma(S, s);
    else if (in->op == TILE_I_ADD && in->atom) select_acc_step(S, s, last ? loop : NULL);
    else if (in->op == TILE_I_WGMMA || in->op == TILE_I_TMA_LOAD || in->op == TILE_I_TMA_STORE) {
        if (S->t->cuda) select_hopper(S, s); /* the C generator refuses them with its own message */
    }
    else if (in->atom && !tile_op_target(in->op)) {
        int named = 0;
        target_atom_resolve(in->atom, NULL, &named);
        sel_err(S, s->pos, TSL_ERR_SEMANTIC, "%s: %s atom '%s' (no atom implements it)", tile_op_info_of(in->op)->name,
                named ? "an" : "unknown", in->atom);
    }
}

static void select_block(selector *S, tile_block *b, const tile_stmt *loop)
{
    for (int i = 0; b && i < b->n; i++) {
        tile_stmt *s = b->items[i];
        select_stmt(S, s, loop, i == b->n - 1);
        if (s->kind == TILE_S_PIPELINE && s->pipe.body && s->pipe.body != s->body) select_block(S, s->pipe.body, NULL);
    }
}

tsl_status target_select(tile_module *m, tile_kernel *k, const target *t, const tsl_source *src, tsl_diag *d)
{
    if (!t) {
        diag_error(d, TSL_ERR_ARG, "target_select: no target");
        return TSL_ERR_ARG;
    }
    selector S = {.m = m, .t = t, .src = src, .d = d};
    S.vis = (tile_decomp_visitor){.ctx = &S, .scalar = sv_ok, .indices = sv_ok, .branch = sv_walk_arms,
                                  .loop = sv_walk_arms, .collective = sv_collective, .move = sv_move, .fail = sv_fail};
    /* k alone when given (it need not be one of m's: a caller may hold
     * the kernel of another copy of the module), else every kernel of m */
    for (int i = 0; i < (k ? 1 : m->nkernels); i++) {
        S.k = k ? k : m->kernels[i];
        S.threads = S.k->threads;
        if (S.k->cluster > 1 && t->cuda && t->sm < 90)
            sel_err(&S, S.k->pos, TSL_ERR_UNAVAILABLE, "kernel '%s': cluster(%d) needs sm_90 or later; the target is %s",
                    S.k->name, S.k->cluster, t->name);
        select_block(&S, S.k->body, NULL);
    }
    return S.st;
}
