/* ukr.c — the micro-kernel atoms' patterns (cpu.ukr.f32 and
 * cpu.ukr.f32.gather, target/cpu.c): which `for` loops the register-
 * blocked f32 micro-kernel can run, checked when a CPU plan asks for it
 * (target_select) and read by the C generator to print it
 * (codegen/c_emit_gemm.c, c_emit_rblk.c).
 *
 * cpu.ukr.f32 — a `for kk` whose body is exactly
 *     a  = load_shared SA[..] -> register f32[BM, 1]      (any layout covering every row)
 *          (or a load of [1, BM] + view: a transposed A)
 *     b  = load_shared SB[..] -> register f32[1, BN]      (or a load of [BN, 1] + view)
 *     ab = broadcast a -> register f32[BM, BN] layout L dim 1
 *     bb = broadcast b -> register f32[BM, BN] layout L dim 0
 *     p  = mul ab, bb          (either order)
 *     add acc, p -> acc atom cpu.ukr.f32     (acc f32 with layout L)
 * where L gives every thread a contiguous TM x TN row-major micro-tile (TM
 * <= 16, TN <= 64, TM x TN <= 256), SA and SB are f32 shared tensors with
 * affine layouts (offset = sum of coordinate x stride), SB's column
 * stride is 1, the operands are plain index views, and a, b, ab, bb, p
 * are read nowhere else. Per slot s of acc the loop computes acc[s] +=
 * SA(row(s), kk) * SB(kk, col(s)) in kk order.
 *
 * cpu.ukr.f32.gather — a `for j` whose body is exactly
 *     ai = add KB, OFF                 KB: i64 register [BM, 1], OFF an int expression
 *     a  = gather AF, ai -> register f32[BM, 1] mask KL      AF: global f32, rank 1
 *     b  = load_global BF[BOFF] -> register f32[BN]          BF: global f32, rank 1
 *     ab, bb, p as above
 *     add acc, p -> acc atom cpu.ukr.f32.gather
 * with the same micro-tile rule, a and b holding every coordinate, and
 * ai, a, b, ab, bb, p read nowhere else: acc[s] += AF[KB[row(s)] + OFF] *
 * BF[BOFF + col(s)] (masked rows and reads past BF's end: 0).
 *
 * cpu.ukr.dequant — a `for r` whose body is exactly
 *     w8 = load_global WB[ROW, COL] -> register u8[BN * N / 8]   WB: global u8, rank 2
 *     q  = view w8 -> register DT[BN]         DT: 1..8-bit integer or low-bit float
 *     wf = cast q -> register f32[BN]
 *     x  = load_global X[XR, XC] -> register f16|bf16|f32[1]   X: global, rank 2
 *     xf = cast x -> register f32[1]          (absent when X is f32)
 *     xb = broadcast xf -> register f32[BN] dim 0
 *     p  = mul wf, xb          (either order)
 *     add acc, p -> acc atom cpu.ukr.dequant
 * with every tensor one thread's run (slot i is element i) and the
 * temporaries read nowhere else: acc[i] += value(field i of WB's row) *
 * X[XR, XC] per r, in r order (the quantized matmul's CPU plan). */
#include <stdlib.h>
#include <string.h>

#include "target/select.h"

/* A register tensor's coordinate per (thread, local) slot, -1 outside its
 * dims (the C generator's tables, c_emit_base.c). */
typedef struct ktab {
    int rank;
    int64_t dims[8];
    int64_t nthreads, nlocals, ns;
    int64_t *coord;
} ktab;

typedef struct matcher {
    const tile_kernel *k;
    ktab tabs[16];
    const tile_value *tabv[16];
    int ntab;
    char *why;
    size_t nwhy;
} matcher;

static int no(matcher *M, const char *why)
{
    if (M->why && !M->why[0]) snprintf(M->why, M->nwhy, "%s", why);
    return 0;
}

static const ktab *tab_of(matcher *M, const tile_value *v)
{
    if (!v || v->kind != TILE_V_TENSOR || v->type.space != TILE_REGISTER || !v->type.layout ||
        v->type.layout->v.kind != LAYOUT_VALUE_DIST || v->type.rank > 8)
        return NULL;
    for (int i = 0; i < M->ntab; i++)
        if (M->tabv[i] == v) return &M->tabs[i];
    if (M->ntab == (int)TSL_COUNTOF(M->tabs)) return NULL;
    const dist_layout *dl = &v->type.layout->v.dist;
    ktab t = {.rank = v->type.rank, .nthreads = dl->threads, .nlocals = dl->locals, .ns = dl->threads * dl->locals};
    for (int i = 0; i < t.rank; i++)
        if (!tile_expr_const(v->type.dims[i], &t.dims[i]) || t.dims[i] < 1) return NULL;
    if (t.ns > (1 << 22)) return NULL;
    t.coord = malloc(sizeof(int64_t) * (size_t)(t.ns * t.rank + 1));
    if (!t.coord) return NULL;
    int lr = dl->rank;
    for (int64_t s = 0; s < t.ns; s++) {
        int64_t full[DIST_MAX_RANK];
        int ok = dist_layout_map(dl, s / t.nlocals, s % t.nlocals, full) == 0;
        for (int i = 0; ok && i < lr - t.rank; i++) ok = full[i] == 0;
        for (int i = 0; ok && i < t.rank; i++) {
            int64_t x = lr - t.rank + i >= 0 ? full[lr - t.rank + i] : 0;
            ok = x >= 0 && x < t.dims[i];
        }
        for (int i = 0; i < t.rank; i++) t.coord[s * t.rank + i] = ok ? full[lr - t.rank + i] : -1;
    }
    M->tabs[M->ntab] = t;
    M->tabv[M->ntab] = v;
    return &M->tabs[M->ntab++];
}

static void matcher_free(matcher *M)
{
    for (int i = 0; i < M->ntab; i++) free(M->tabs[i].coord);
}

static int is_f32(tile_dtype t)
{
    return t.kind == TILE_DT_FLOAT && t.bits == 32 && t.exp == 8;
}

static int is_instr(const tile_stmt *s, tile_op op)
{
    return s->kind == TILE_S_INSTR && s->instr.op == op && !s->instr.decomp;
}

static const tile_value *whole_reg(const tile_operand *o)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->nsteps || o->v->type.space != TILE_REGISTER) return NULL;
    return o->v;
}

/* Does block b (skipping statement `skip`) mention any of vals? */
static int mentions(const tile_block *b, const tile_stmt *skip, const tile_value *const *vals, int nv)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s == skip) continue;
        if (s->kind == TILE_S_INSTR) {
            const tile_instr *in = &s->instr;
            for (int j = 0; j < nv; j++) {
                for (int a = 0; a < in->nargs; a++)
                    if (in->args[a].v == vals[j]) return 1;
                if ((in->has_dst && in->dst.v == vals[j]) || in->mask == vals[j]) return 1;
            }
            if (mentions(in->decomp, skip, vals, nv)) return 1;
        }
        if (mentions(s->body, skip, vals, nv) || mentions(s->els, skip, vals, nv)) return 1;
        for (int r = 0; r < s->nroles; r++)
            if (mentions(s->roles[r].body, skip, vals, nv)) return 1;
    }
    return 0;
}

static int same_coords(const ktab *x, const ktab *y)
{
    return x && y && x->ns == y->ns && x->rank == y->rank &&
           !memcmp(x->coord, y->coord, sizeof(int64_t) * (size_t)(x->ns * x->rank));
}

/* Each thread's locals a contiguous TM x TN row-major micro-tile. */
static int microtile(const ktab *tab, const dist_layout *lay, int64_t *tm, int64_t *tn)
{
    int64_t ld[DIST_MAX_RANK];
    int lr = lay->rank;
    if (tab->rank != 2 || lr < 2) return 0;
    for (int i = 0; i < lr; i++) ld[i] = 1;
    for (int k = 0; k < lay->naxes; k++)
        if (!lay->axis[k].is_thread && lay->axis[k].dim >= 0) ld[lay->axis[k].dim] *= lay->axis[k].extent;
    *tm = ld[lr - 2];
    *tn = ld[lr - 1];
    if (*tm * *tn != tab->nlocals) return 0;
    for (int64_t t = 0; t < tab->nthreads; t++) {
        const int64_t *o = &tab->coord[t * tab->nlocals * 2];
        for (int64_t i = 0; i < *tm; i++)
            for (int64_t j = 0; j < *tn; j++) {
                const int64_t *q = &tab->coord[(t * tab->nlocals + i * *tn + j) * 2];
                if (o[0] < 0 || q[0] != o[0] + i || q[1] != o[1] + j) return 0;
            }
    }
    return 1;
}

static int tile_ok(matcher *M, const target_atom *row, const tile_value *acc, target_ukr *u)
{
    const ktab *tab = tab_of(M, acc);
    if (!tab || !microtile(tab, &acc->type.layout->v.dist, &u->tm, &u->tn))
        return no(M, "the accumulator's layout does not give every thread a contiguous row-major micro-tile");
    if (u->tm > row->m || u->tn > row->n || u->tm * u->tn > row->regs)
        return no(M, "the micro-tile is larger than the micro-kernel's registers (16 x 64, 256 accumulators)");
    u->nthr = tab->nthreads;
    u->nloc = tab->nlocals;
    return 1;
}

/* ---- cpu.ukr.f32 ------------------------------------------------------------------------- */

/* Strides of an affine shared layout, checked for every coordinate; 0 when
 * swizzled or otherwise not affine. */
static int affine_strides(const tile_value *v, int64_t *st)
{
    int64_t dims[8], n = 1;
    int r = v->type.rank;
    if (r < 2 || r > 8) return 0;
    for (int i = 0; i < r; i++)
        if (!tile_expr_const(v->type.dims[i], &dims[i])) return 0;
    const tile_layout *tl = v->type.layout;
    if (!tl) {
        for (int i = r - 1, m = 1; i >= 0; m *= (int)dims[i], i--) st[i] = m;
        return 1;
    }
    if (tl->v.kind != LAYOUT_VALUE_DATA) return 0;
    const layout *l = &tl->v.data;
    int64_t co[8] = {0};
    if (layout_eval_coord(l, co, r) != 0) return 0;
    for (int i = 0; i < r; i++) {
        n *= dims[i];
        if (dims[i] > 1) {
            co[i] = 1;
            st[i] = layout_eval_coord(l, co, r);
            co[i] = 0;
        } else {
            st[i] = 0;
        }
    }
    if (n > (1 << 20)) return 0;
    for (int64_t e = 0; e < n; e++) {
        int64_t x = e, want = 0;
        for (int i = r - 1; i >= 0; i--) {
            co[i] = x % dims[i];
            x /= dims[i];
            want += co[i] * st[i];
        }
        if (layout_eval_coord(l, co, r) != want) return 0;
    }
    return 1;
}

/* An f32 register tensor d0 x d1 every coordinate of which some slot holds. */
static const ktab *covering(matcher *M, const tile_value *r, int64_t d0, int64_t d1)
{
    const ktab *t = tab_of(M, r);
    if (!t || !is_f32(r->type.dt) || t->rank != 2 || t->dims[0] != d0 || t->dims[1] != d1) return NULL;
    uint8_t *seen = calloc((size_t)(d0 * d1), 1);
    int64_t nseen = 0;
    for (int64_t q = 0; seen && q < t->ns; q++) {
        int64_t y = t->coord[q * 2], x = t->coord[q * 2 + 1];
        if (y < 0) continue;
        if (!seen[y * d1 + x]) nseen++;
        seen[y * d1 + x] = 1;
    }
    free(seen);
    return nseen == d0 * d1 ? t : NULL;
}

/* The operand of one broadcast (file comment): a load_shared of [d0, d1],
 * or of [d1, d0] and a transposing view. */
static const tile_value *match_load(matcher *M, const tile_block *b, int *at, int64_t d0, int64_t d1, int64_t *st,
                                    int *rank, int *vdim, const tile_stmt **ls, const tile_value **extra)
{
    if (*at >= b->n) return NULL;
    const tile_stmt *s = b->items[*at];
    if (!is_instr(s, TILE_I_LOAD_SHARED) || s->instr.nargs != 1 || !s->instr.result) return NULL;
    const tile_operand *o = &s->instr.args[0];
    const tile_value *r = s->instr.result;
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_SHARED || !is_f32(o->v->type.dt)) return NULL;
    if (o->nsteps != 1 || o->steps[0].kind != TILE_STEP_INDEX || o->v->type.rank < 2) return NULL;
    int rk = o->v->type.rank, along = d0 > 1 ? 0 : 1;
    *extra = NULL;
    if (covering(M, r, d0, d1)) {
        *vdim = rk - 2 + along;
        (*at)++;
    } else {
        const ktab *t0 = tab_of(M, r);
        if (*at + 1 >= b->n || !t0 || !is_f32(r->type.dt) || t0->rank != 2 || t0->dims[0] != d1 || t0->dims[1] != d0)
            return NULL;
        const tile_stmt *v = b->items[*at + 1];
        if (!is_instr(v, TILE_I_VIEW) || v->instr.nargs != 1 || whole_reg(&v->instr.args[0]) != r || !v->instr.result)
            return NULL;
        const ktab *t = covering(M, v->instr.result, d0, d1);
        if (!t || t->ns != t0->ns) return NULL;
        for (int64_t q = 0; q < t->ns; q++) {
            const int64_t *x = &t->coord[q * 2], *y = &t0->coord[q * 2];
            if (x[0] >= 0 && (y[0] != x[1] || y[1] != x[0])) return NULL;
        }
        *extra = r;
        r = v->instr.result;
        *vdim = rk - 1 - along;
        *at += 2;
    }
    if (!affine_strides(o->v, st)) return NULL;
    *rank = rk;
    *ls = s;
    return r;
}

static int match_shared(matcher *M, const tile_stmt *f, target_ukr *u)
{
    const tile_block *b = f->body;
    if (!b || b->n < 6 || b->n > 8) return no(M, "the loop body is not the six to eight statements of the k step");
    const tile_stmt *s3 = b->items[b->n - 4], *s4 = b->items[b->n - 3], *s5 = b->items[b->n - 2],
                    *s6 = b->items[b->n - 1];
    if (!is_instr(s3, TILE_I_BROADCAST) || !is_instr(s4, TILE_I_BROADCAST) || !is_instr(s5, TILE_I_MUL) ||
        !is_instr(s6, TILE_I_ADD))
        return no(M, "the body does not end broadcast, broadcast, mul, add");
    if (s3->instr.dim != 1 || s4->instr.dim != 0 || !s3->instr.result || !s4->instr.result || !s5->instr.result)
        return no(M, "the broadcasts are not of a column (dim 1) then a row (dim 0)");
    const tile_value *ab = s3->instr.result, *bb = s4->instr.result, *p = s5->instr.result;
    const ktab *tab = tab_of(M, ab);
    if (!tab || tab->rank != 2 || !is_f32(ab->type.dt) || !is_f32(bb->type.dt) || !is_f32(p->type.dt))
        return no(M, "the outer product is not f32 [BM, BN]");
    u->bm = tab->dims[0];
    u->bn = tab->dims[1];
    int at = 0;
    const tile_value *xa = NULL, *xb = NULL;
    const tile_value *a = match_load(M, b, &at, u->bm, 1, u->sa, &u->ra, &u->va, &u->la, &xa);
    const tile_value *bv = a ? match_load(M, b, &at, 1, u->bn, u->sb, &u->rb, &u->vb, &u->lb, &xb) : NULL;
    if (!a || !bv || at != b->n - 4 || u->sb[u->vb] != 1)
        return no(M, "the operands are not a column of shared A and a row of shared B (f32, affine layouts, B's row "
                     "contiguous) loaded whole");
    if (whole_reg(&s3->instr.args[0]) != a || whole_reg(&s4->instr.args[0]) != bv)
        return no(M, "the broadcasts do not read the loaded column and row");
    const tile_value *m0 = whole_reg(&s5->instr.args[0]), *m1 = whole_reg(&s5->instr.args[1]);
    if (!((m0 == ab && m1 == bb) || (m0 == bb && m1 == ab))) return no(M, "mul does not multiply the two broadcasts");
    const tile_instr *ad = &s6->instr;
    const tile_value *acc = whole_reg(&ad->args[0]);
    if (ad->result || !ad->has_dst || ad->dst.nsteps || ad->dst.v != acc || whole_reg(&ad->args[1]) != p || !acc ||
        !is_f32(acc->type.dt))
        return no(M, "the add is not `add acc, p -> acc` with an f32 acc");
    const tile_value *tmp[7] = {a, bv, ab, bb, p, xa ? xa : a, xb ? xb : a};
    for (int i = 0; i < 7; i++)
        if (tmp[i] == acc) return no(M, "acc is one of the step's temporaries");
    if (!same_coords(tab, tab_of(M, bb)) || !same_coords(tab, tab_of(M, p)) || !same_coords(tab, tab_of(M, acc)))
        return no(M, "the broadcasts, the product and acc are not laid out alike");
    if (mentions(M->k->body, f, tmp, 7)) return no(M, "a temporary of the step is read outside the loop");
    u->acc = acc;
    return 1;
}

/* ---- cpu.ukr.f32.gather ---------------------------------------------------------------------- */

static const tile_value *flat_global(const tile_operand *o, int want_index)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_GLOBAL || o->v->type.rank != 1 ||
        !is_f32(o->v->type.dt))
        return NULL;
    if (want_index ? o->nsteps != 1 || o->steps[0].kind != TILE_STEP_INDEX : o->nsteps != 0) return NULL;
    return o->v;
}

/* Every coordinate of a table whose dims multiply to n has an owner. */
static int owned(const ktab *t, int64_t n)
{
    uint8_t *seen = calloc((size_t)n + 1, 1);
    int64_t got = 0;
    for (int64_t q = 0; seen && q < t->ns; q++) {
        const int64_t *x = &t->coord[q * t->rank];
        if (x[0] < 0) continue;
        int64_t e = 0;
        for (int d = 0; d < t->rank; d++) e = e * t->dims[d] + x[d];
        if (e < n && !seen[e]) seen[e] = 1, got++;
    }
    free(seen);
    return got == n;
}

static int match_gather(matcher *M, const tile_stmt *f, target_ukr *u)
{
    const tile_block *b = f->body;
    if (!b || b->n != 7) return no(M, "the loop body is not the seven statements of the gathered step");
    const tile_stmt *const *it = (const tile_stmt *const *)b->items;
    if (!is_instr(it[0], TILE_I_ADD) || !is_instr(it[1], TILE_I_GATHER) || !is_instr(it[2], TILE_I_LOAD_GLOBAL) ||
        !is_instr(it[3], TILE_I_BROADCAST) || !is_instr(it[4], TILE_I_BROADCAST) || !is_instr(it[5], TILE_I_MUL) ||
        !is_instr(it[6], TILE_I_ADD))
        return no(M, "the body is not add, gather, load_global, broadcast, broadcast, mul, add");
    for (int i = 0; i < 6; i++)
        if (!it[i]->instr.result) return no(M, "a step statement has no result");
    const tile_instr *iai = &it[0]->instr;
    const tile_value *ai = iai->result;
    if (iai->nargs != 2 || iai->mask || !(u->kb = whole_reg(&iai->args[0])) || iai->args[1].v || !iai->args[1].scalar ||
        u->kb->type.dt.kind != TILE_DT_INT || u->kb->type.dt.bits != 64 || ai->type.dt.bits != 64)
        return no(M, "the first add is not `ai = add KB, OFFSET` of i64 row offsets");
    const tile_instr *ia = &it[1]->instr;
    const tile_value *a = ia->result;
    if (ia->nargs != 2 || !(u->af = flat_global(&ia->args[0], 0)) || whole_reg(&ia->args[1]) != ai || !ia->mask ||
        !is_f32(a->type.dt))
        return no(M, "the gather is not of a flat f32 global A by ai, masked");
    u->kl = ia->mask;
    const tile_instr *ib = &it[2]->instr;
    const tile_value *bv = ib->result;
    if (ib->nargs != 1 || !(u->bf = flat_global(&ib->args[0], 1)) || !is_f32(bv->type.dt) || ib->init)
        return no(M, "the load is not of a run of a flat f32 global B");
    const tile_instr *s3 = &it[3]->instr, *s4 = &it[4]->instr, *s5 = &it[5]->instr, *s6 = &it[6]->instr;
    if (s3->dim != 1 || s4->dim != 0 || whole_reg(&s3->args[0]) != a || whole_reg(&s4->args[0]) != bv)
        return no(M, "the broadcasts are not of the gathered column and the loaded run");
    const tile_value *ab = s3->result, *bb = s4->result, *p = s5->result;
    const tile_value *m0 = whole_reg(&s5->args[0]), *m1 = whole_reg(&s5->args[1]);
    if (!((m0 == ab && m1 == bb) || (m0 == bb && m1 == ab))) return no(M, "mul does not multiply the two broadcasts");
    const tile_value *acc = whole_reg(&s6->args[0]);
    if (s6->result || !s6->has_dst || s6->dst.nsteps || s6->dst.v != acc || whole_reg(&s6->args[1]) != p || !acc ||
        !is_f32(acc->type.dt) || !is_f32(ab->type.dt) || !is_f32(bb->type.dt) || !is_f32(p->type.dt))
        return no(M, "the add is not `add acc, p -> acc` in f32");
    const ktab *tab = tab_of(M, acc);
    if (!tab || tab->rank != 2) return no(M, "acc is not a 2-D register tensor");
    u->bm = tab->dims[0];
    u->bn = tab->dims[1];
    const ktab *ta = tab_of(M, a), *tb = tab_of(M, bv), *tk = tab_of(M, u->kb), *tl = tab_of(M, u->kl),
               *tai = tab_of(M, ai);
    if (!ta || ta->rank != 2 || ta->dims[0] != u->bm || ta->dims[1] != 1 || !tb || tb->rank != 1 || tb->dims[0] != u->bn)
        return no(M, "the column is not [BM, 1] or the run not [BN]");
    if (!same_coords(ta, tk) || !same_coords(ta, tl) || !same_coords(ta, tai))
        return no(M, "KB, the mask and ai are not laid out like the column");
    if (!owned(ta, u->bm) || !owned(tb, u->bn)) return no(M, "the column or the run does not hold every element");
    if (!same_coords(tab, tab_of(M, ab)) || !same_coords(tab, tab_of(M, bb)) || !same_coords(tab, tab_of(M, p)))
        return no(M, "the broadcasts, the product and acc are not laid out alike");
    const tile_value *tmp[6] = {ai, a, bv, ab, bb, p};
    for (int i = 0; i < 6; i++)
        if (tmp[i] == acc || tmp[i] == u->kb || tmp[i] == u->kl) return no(M, "acc, KB or the mask is a temporary");
    if (u->kb == acc || u->kl == acc) return no(M, "acc is KB or the mask");
    if (mentions(M->k->body, f, tmp, 6)) return no(M, "a temporary of the step is read outside the loop");
    u->sai = it[0];
    u->sga = it[1];
    u->slb = it[2];
    u->acc = acc;
    return 1;
}

/* ---- cpu.ukr.dequant -------------------------------------------------------------------------- */

/* A 1-D register tensor of n elements whose slot i (one thread) is element i. */
static int run_of(matcher *M, const tile_value *v, int64_t n)
{
    const ktab *t = tab_of(M, v);
    if (!t || t->rank != 1 || t->nthreads != 1 || t->dims[0] != n || t->ns != n) return 0;
    for (int64_t i = 0; i < n; i++)
        if (t->coord[i] != i) return 0;
    return 1;
}

static int match_dequant(matcher *M, const tile_stmt *f, target_ukr *u)
{
    const tile_block *b = f->body;
    if (!b || (b->n != 7 && b->n != 8)) return no(M, "the loop body is not the seven or eight statements of a row");
    const tile_stmt *const *it = (const tile_stmt *const *)b->items;
    int cx = b->n == 8; /* X converted to f32 */
    const tile_stmt *sxb = it[4 + cx], *smul = it[5 + cx], *sadd = it[6 + cx];
    if (!is_instr(it[0], TILE_I_LOAD_GLOBAL) || !is_instr(it[1], TILE_I_VIEW) || !is_instr(it[2], TILE_I_CAST) ||
        !is_instr(it[3], TILE_I_LOAD_GLOBAL) || (cx && !is_instr(it[4], TILE_I_CAST)) ||
        !is_instr(sxb, TILE_I_BROADCAST) || !is_instr(smul, TILE_I_MUL) || !is_instr(sadd, TILE_I_ADD))
        return no(M, "the body is not load_global, view, cast, load_global, [cast,] broadcast, mul, add");
    for (int i = 0; i < b->n - 1; i++)
        if (!it[i]->instr.result) return no(M, "a step statement has no result");
    const tile_value *w8 = it[0]->instr.result, *wq = it[1]->instr.result, *wf = it[2]->instr.result;
    const tile_operand *ow = &it[0]->instr.args[0];
    u->wb = ow->v;
    if (!u->wb || u->wb->type.space != TILE_GLOBAL || u->wb->type.rank != 2 || u->wb->type.dt.kind != TILE_DT_UINT ||
        u->wb->type.dt.bits != 8 || ow->nsteps != 1 || ow->steps[0].kind != TILE_STEP_INDEX || it[0]->instr.init)
        return no(M, "the first load is not of a row of a rank-2 u8 global");
    u->qdt = wq->type.dt;
    int qb = u->qdt.bits;
    if (!(dtype_desc_is_lowfloat(u->qdt) || ((u->qdt.kind == TILE_DT_UINT || u->qdt.kind == TILE_DT_INT) && qb <= 8)))
        return no(M, "the view is not of a dtype of 1 to 8 bits");
    const ktab *tq = tab_of(M, wq);
    if (!tq || tq->rank != 1) return no(M, "the view is not 1-D");
    u->bn = tq->dims[0];
    if (u->bn % 8 || !run_of(M, w8, u->bn * qb / 8) || !run_of(M, wq, u->bn) || !run_of(M, wf, u->bn) ||
        whole_reg(&it[1]->instr.args[0]) != w8 || whole_reg(&it[2]->instr.args[0]) != wq || !is_f32(wf->type.dt))
        return no(M, "the bytes, the view and the cast are not one thread's run of BN elements (BN a multiple of 8)");
    const tile_operand *ox = &it[3]->instr.args[0];
    const tile_value *x1 = it[3]->instr.result, *xf = cx ? it[4]->instr.result : x1;
    u->xg = ox->v;
    tile_dtype xd = u->xg ? u->xg->type.dt : u->qdt;
    if (!u->xg || u->xg->type.space != TILE_GLOBAL || u->xg->type.rank != 2 || xd.kind != TILE_DT_FLOAT ||
        (xd.bits != 16 && xd.bits != 32) || ox->nsteps != 1 || ox->steps[0].kind != TILE_STEP_INDEX ||
        it[3]->instr.init || !run_of(M, x1, 1) || !run_of(M, xf, 1) || !is_f32(xf->type.dt) ||
        (cx && whole_reg(&it[4]->instr.args[0]) != x1))
        return no(M, "the second load is not of one element of a rank-2 f16/bf16/f32 global X");
    const tile_value *xb = sxb->instr.result, *p = smul->instr.result;
    if (sxb->instr.dim != 0 || whole_reg(&sxb->instr.args[0]) != xf || !run_of(M, xb, u->bn) || !run_of(M, p, u->bn))
        return no(M, "the broadcast is not of X's element over the run");
    const tile_value *m0 = whole_reg(&smul->instr.args[0]), *m1 = whole_reg(&smul->instr.args[1]);
    if (!((m0 == wf && m1 == xb) || (m0 == xb && m1 == wf))) return no(M, "mul does not multiply the weights by x");
    const tile_value *acc = whole_reg(&sadd->instr.args[0]);
    if (sadd->instr.result || !sadd->instr.has_dst || sadd->instr.dst.nsteps || sadd->instr.dst.v != acc ||
        whole_reg(&sadd->instr.args[1]) != p || !acc || !is_f32(acc->type.dt) || !run_of(M, acc, u->bn))
        return no(M, "the add is not `add acc, p -> acc` over the run in f32");
    const tile_value *tmp[7] = {w8, wq, wf, x1, xf, xb, p};
    for (int i = 0; i < 7; i++)
        if (tmp[i] == acc) return no(M, "acc is a temporary of the step");
    if (mentions(M->k->body, f, tmp, 7)) return no(M, "a temporary of the step is read outside the loop");
    u->sw = it[0];
    u->sx = it[3];
    u->acc = acc;
    u->bm = 1;
    u->tm = 1;
    u->tn = u->bn;
    u->nthr = 1;
    u->nloc = u->bn;
    return 1;
}

int target_ukr_match(const tile_kernel *k, const tile_stmt *f, target_ukr *u, char *why, size_t nwhy)
{
    memset(u, 0, sizeof *u);
    if (why && nwhy) why[0] = 0;
    matcher M = {.k = k, .why = why, .nwhy = nwhy};
    int ok = 0;
    const tile_block *b = f && f->kind == TILE_S_FOR ? f->body : NULL;
    const tile_stmt *last = b && b->n ? b->items[b->n - 1] : NULL;
    const target_atom *row = last && last->kind == TILE_S_INSTR ? target_atom_resolve(last->instr.atom, NULL, NULL) : NULL;
    if (!row || row->kind != TARGET_K_UKR) {
        no(&M, "the loop's last statement does not ask for a micro-kernel");
    } else {
        u->row = row;
        if (row->sem == TARGET_SEM_DEQUANT_ACC) {
            ok = match_dequant(&M, f, u);
            if (ok && u->bn > row->n) ok = no(&M, "the run is longer than the micro-kernel takes");
        } else {
            ok = row->space[TARGET_A] == TARGET_SP_SHARED ? match_shared(&M, f, u) : match_gather(&M, f, u);
            if (ok) ok = tile_ok(&M, row, u->acc, u);
        }
    }
    matcher_free(&M);
    return ok;
}
