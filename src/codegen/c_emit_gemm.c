/* c_emit_gemm.c — the register-blocked f32 micro-kernel for the k loop of
 * the contraction strategy (docs/sched.md, "CPU (f32)").
 *
 * Recognises, at generation time, a `for kk` whose body is exactly
 *
 *     a  = load_shared SA[..]  -> register f32[BM, 1]        (any layout covering every row)
 *     b  = load_shared SB[..]  -> register f32[1, BN]        (any layout covering every column)
 *     ab = broadcast a -> register f32[BM, BN] layout L dim 1
 *     bb = broadcast b -> register f32[BM, BN] layout L dim 0
 *     p  = mul ab, bb          (either order)
 *     add acc, p -> acc        (acc f32 with layout L)
 *
 * where L gives every thread a contiguous TM x TN row-major micro-tile (the
 * thread's locals are its rows, then columns), SA and SB are f32 shared
 * tensors whose data layouts are affine (offset = sum of coordinate x
 * stride), SB's column stride is 1, the operands are plain index views,
 * and a, b, ab, bb, p are read nowhere else. Then the loop computes, per
 * slot s of acc, acc[s] += SA(row(s), kk) * SB(kk, col(s)) for kk in order
 * — what the interpreter computes, with each multiply-add fused.
 *
 * Emitted: a run-time pre-pass over kk that checks step 1, every shared
 * access in bounds (the generic code would report the error instead) and
 * both operands' offsets linear in kk; if it holds, each thread's
 * micro-tile runs through one static function with TM x TN/VW vector
 * accumulators held in locals for the whole loop (VW picked from
 * __AVX512F__ / __AVX__ when the generated C is compiled, else 4, else 1);
 * otherwise the generic loop runs. Threads are visited column-panel by
 * column-panel so a thread column's B panel stays in L1. */
#include <stdlib.h>
#include <string.h>

#include "codegen/c_int.h"

typedef struct gemm_match {
    const tile_stmt *la, *lb;     /* the two load_shared statements */
    int va, vb;                   /* the view dim of SA (SB) along m (n) */
    const tile_value *acc;
    int64_t bm, bn, tm, tn, nthr, nloc;
    int64_t sa[CGC_MAX_RANK], sb[CGC_MAX_RANK]; /* shared strides (elements) */
    int ra, rb;                   /* ranks of SA and SB */
} gemm_match;

/* Strides of an affine shared layout: offset(coord) == sum coord[i] *
 * st[i] for every coordinate of the tensor's dims (checked exhaustively;
 * shared tensors are small). 0 when swizzled or hierarchical in a way that
 * is not affine. */
static int affine_strides(cgc *c, const tile_value *v, int64_t *st)
{
    int64_t dims[CGC_MAX_RANK], n = 1;
    int r = v->type.rank;
    if (r < 2 || !cgc_cdims(c, v, dims)) return 0;
    const tile_layout *tl = v->type.layout;
    if (!tl) {
        for (int i = r - 1, m = 1; i >= 0; m *= (int)dims[i], i--) st[i] = m;
        return 1;
    }
    if (tl->v.kind != LAYOUT_VALUE_DATA) return 0;
    const layout *l = &tl->v.data;
    int64_t co[CGC_MAX_RANK] = {0};
    int64_t base = layout_eval_coord(l, co, r);
    if (base != 0) return 0;
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

/* An f32 register tensor of dims d0 x d1 (rank 2) every coordinate of
 * which some slot holds. */
static const cgc_tab *covering(cgc *c, const tile_value *r, int64_t d0, int64_t d1)
{
    const cgc_tab *t = cgc_vtab(c, r);
    if (!t || !cgc_is_f32(r->type.dt) || t->rank != 2 || t->dims[0] != d0 || t->dims[1] != d1) return NULL;
    /* every coordinate has an owner: the broadcasts read no pad slot */
    uint8_t *seen = arena_alloc(c->ar, (size_t)(d0 * d1));
    int64_t nseen = 0;
    for (int64_t q = 0; q < t->ns; q++) {
        int32_t y = t->coord[q * 2], x = t->coord[q * 2 + 1];
        if (y < 0) continue;
        if (!seen[y * d1 + x]) nseen++;
        seen[y * d1 + x] = 1;
    }
    return nseen == d0 * d1 ? t : NULL;
}

/* The operand of one broadcast, a register [d0, d1] with one dim of
 * extent 1, from statements items[*at..]: either
 *   x = load_shared S[..] -> register f32[d0, d1]
 * or (a transposed operand)
 *   x0 = load_shared S[..] -> register f32[d1, d0]
 *   x = view x0 -> register f32[d0, d1]    (slot s of x is slot s of x0, transposed)
 * from a plain index view of an f32 shared tensor with an affine layout.
 * Gives x; *vdim: the view dim of S along the long dim; x0 in *extra. */
static const tile_value *match_load(cgc *c, const tile_block *b, int *at, int64_t d0, int64_t d1, int64_t *st,
                                    int *rank, int *vdim, const tile_stmt **ls, const tile_value **extra)
{
    if (*at >= b->n) return NULL;
    const tile_stmt *s = b->items[*at];
    if (!cgc_is_instr(s, TILE_I_LOAD_SHARED) || s->instr.nargs != 1 || !s->instr.result) return NULL;
    const tile_operand *o = &s->instr.args[0];
    const tile_value *r = s->instr.result;
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_SHARED || !cgc_is_f32(o->v->type.dt))
        return NULL;
    if (o->nsteps != 1 || o->steps[0].kind != TILE_STEP_INDEX || o->v->type.rank < 2) return NULL;
    int rk = o->v->type.rank, along = d0 > 1 ? 0 : 1; /* the long dim of x */
    *extra = NULL;
    if (covering(c, r, d0, d1)) {
        *vdim = rk - 2 + along;
        (*at)++;
    } else {
        const cgc_tab *t0 = cgc_vtab(c, r);
        if (*at + 1 >= b->n || !t0 || !cgc_is_f32(r->type.dt) || t0->rank != 2 || t0->dims[0] != d1 || t0->dims[1] != d0)
            return NULL;
        const tile_stmt *v = b->items[*at + 1];
        if (!cgc_is_instr(v, TILE_I_VIEW) || v->instr.nargs != 1 || cgc_whole_reg(&v->instr.args[0]) != r || !v->instr.result)
            return NULL;
        const cgc_tab *t = covering(c, v->instr.result, d0, d1);
        if (!t || t->ns != t0->ns) return NULL;
        for (int64_t q = 0; q < t->ns; q++) {
            const int32_t *x = &t->coord[q * 2], *y = &t0->coord[q * 2];
            if (x[0] >= 0 && (y[0] != x[1] || y[1] != x[0])) return NULL;
        }
        *extra = r;
        r = v->instr.result;
        *vdim = rk - 1 - along;
        *at += 2;
    }
    if (!affine_strides(c, o->v, st)) return NULL;
    *rank = rk;
    *ls = s;
    return r;
}

int cgc_tab_microtile(const cgc_tab *tab, int64_t *tm, int64_t *tn)
{
    int64_t ld[CGC_MAX_RANK > DIST_MAX_RANK ? CGC_MAX_RANK : DIST_MAX_RANK];
    int lr = tab->lay->rank;
    if (tab->rank != 2 || lr < 2) return 0;
    cgc_local_shape(tab->lay, ld);
    *tm = ld[lr - 2];
    *tn = ld[lr - 1];
    if (*tm * *tn != tab->nlocals) return 0;
    for (int64_t t = 0; t < tab->nthreads; t++) {
        const int32_t *o = &tab->coord[t * tab->nlocals * 2];
        for (int64_t i = 0; i < *tm; i++)
            for (int64_t j = 0; j < *tn; j++) {
                const int32_t *q = &tab->coord[(t * tab->nlocals + i * *tn + j) * 2];
                if (o[0] < 0 || q[0] != o[0] + i || q[1] != o[1] + j) return 0;
            }
    }
    return 1;
}

/* The pattern of the file comment, with the micro-tile shape. */
static int gemm_match_for(cgc *c, const tile_stmt *f, gemm_match *g)
{
    memset(g, 0, sizeof *g);
    const tile_block *b = f->body;
    if (!b || b->n < 6 || b->n > 8) return 0;
    const tile_stmt *s3 = b->items[b->n - 4], *s4 = b->items[b->n - 3], *s5 = b->items[b->n - 2],
                    *s6 = b->items[b->n - 1];
    if (!cgc_is_instr(s3, TILE_I_BROADCAST) || !cgc_is_instr(s4, TILE_I_BROADCAST) || !cgc_is_instr(s5, TILE_I_MUL) ||
        !cgc_is_instr(s6, TILE_I_ADD))
        return 0;
    if (s3->instr.dim != 1 || s4->instr.dim != 0 || !s3->instr.result || !s4->instr.result || !s5->instr.result)
        return 0;
    const tile_value *ab = s3->instr.result, *bb = s4->instr.result, *p = s5->instr.result;
    const cgc_tab *tab = cgc_vtab(c, ab);
    if (!tab || tab->rank != 2 || !cgc_is_f32(ab->type.dt) || !cgc_is_f32(bb->type.dt) || !cgc_is_f32(p->type.dt)) return 0;
    g->bm = tab->dims[0];
    g->bn = tab->dims[1];
    int at = 0;
    const tile_value *xa = NULL, *xb = NULL;
    const tile_value *a = match_load(c, b, &at, g->bm, 1, g->sa, &g->ra, &g->va, &g->la, &xa);
    const tile_value *bv = a ? match_load(c, b, &at, 1, g->bn, g->sb, &g->rb, &g->vb, &g->lb, &xb) : NULL;
    if (!a || !bv || at != b->n - 4 || g->sb[g->vb] != 1) return 0;
    if (cgc_whole_reg(&s3->instr.args[0]) != a || cgc_whole_reg(&s4->instr.args[0]) != bv) return 0;
    const tile_value *m0 = cgc_whole_reg(&s5->instr.args[0]), *m1 = cgc_whole_reg(&s5->instr.args[1]);
    if (!((m0 == ab && m1 == bb) || (m0 == bb && m1 == ab))) return 0;
    const tile_instr *ad = &s6->instr;
    const tile_value *acc = cgc_whole_reg(&ad->args[0]);
    if (ad->result || !ad->has_dst || ad->dst.nsteps || ad->dst.v != acc || cgc_whole_reg(&ad->args[1]) != p) return 0;
    if (!acc || !cgc_is_f32(acc->type.dt)) return 0;
    const tile_value *tmp[7] = {a, bv, ab, bb, p, xa ? xa : a, xb ? xb : a};
    for (int i = 0; i < 7; i++)
        if (tmp[i] == acc) return 0;
    if (!cgc_same_coords(tab, cgc_vtab(c, bb)) || !cgc_same_coords(tab, cgc_vtab(c, p)) || !cgc_same_coords(tab, cgc_vtab(c, acc)))
        return 0;
    if (cgc_mentions(c->k->body, f, tmp, 7)) return 0;
    if (!cgc_tab_microtile(tab, &g->tm, &g->tn)) return 0;
    g->nthr = tab->nthreads;
    g->nloc = tab->nlocals;
    if (g->tm > 16 || g->tn > 64 || g->tm * g->tn > 256) return 0;
    g->acc = acc;
    return 1;
}

/* Offset expression (elements) of an index view's anchor, with the view
 * coordinate of dim `rowdim` at 0; emits the bounds condition `ok`
 * update for `ext` elements along rowdim. */
static char *emit_anchor(cgc *c, const tile_stmt *ls, const int64_t *st, int rowdim, int64_t ext, const char *ok)
{
    cgc_view vw;
    if (!cgc_view_of(c, &ls->instr.args[0], &vw)) return NULL;
    strbuf sb = {0};
    for (int i = 0; i < vw.rank; i++) {
        char *x = cgc_view_map(c, &vw, i, "(int64_t)0");
        int64_t hi = vw.dims[i] - (i == rowdim ? ext - 1 : 0);
        if (hi <= 0) cgc_line(c, "%s = 0;", ok);
        else cgc_line(c, "if ((uint64_t)%s >= %lldu) %s = 0;", x, (long long)hi, ok);
        sb_printf(&sb, "%s%s * %lld", i ? " + " : "", x, (long long)st[i]);
    }
    char *r = arena_strdup(c->ar, sb_str(&sb));
    sb_free(&sb);
    return r;
}

int cgc_emit_gemm_for(cgc *c, const tile_stmt *f)
{
    gemm_match g;
    if (getenv("TESSEL_CPU_NO_UKR") || !gemm_match_for(c, f, &g)) return 0;
    int id = c->tmp++;
    const tile_value *sa = g.la->instr.args[0].v, *sbv = g.lb->instr.args[0].v;
    char *fn = arena_printf(c->ar, "tsl_ukr%d", id);
    cgc_ukr u = {.tm = g.tm, .tn = g.tn, .what = "over the k loop", .params = "int64_t ak, int64_t bk, int64_t n",
                 .step = "const float *ap = a + k * ak, *bp = b + k * bk;", .a_row = "ap[%lld]",
                 .a_mul = g.sa[g.va], .unroll = 1};
    cgc_emit_ukr(c, fn, &u);
    /* threads ordered by (column, row) of their micro-tile: a B panel is
     * reused by the whole thread column while it is in L1 */
    const cgc_tab *tab = cgc_vtab(c, g.acc);
    int64_t *ord = arena_alloc(c->ar, sizeof(int64_t) * (size_t)(g.nthr * 3));
    int64_t n = 0;
    for (int64_t col = 0; col < g.bn; col += 1)
        for (int64_t t = 0; t < g.nthr; t++) {
            const int32_t *o = &tab->coord[t * g.nloc * 2];
            if (o[1] != col) continue;
            ord[n * 3] = t * g.nloc;
            ord[n * 3 + 1] = o[0] * g.sa[g.va];
            ord[n * 3 + 2] = o[1];
            n++;
        }
    TSL_ASSERT(n == g.nthr);
    const char *tb = cgc_emit_i32_table(c, "micro-tiles: acc slot, A offset, B offset", ord, n * 3);
    int kv = f->v->id;
    cgc_line(c, "/* the loop is an f32 micro-kernel (%lld x %lld per thread) when the pre-pass allows */",
             (long long)g.tm, (long long)g.tn);
    cgc_line(c, "int ukr%d = step == 1 && hi > lo;", id);
    cgc_line(c, "int64_t ua%d = 0, ub%d = 0, uak%d = 0, ubk%d = 0;", id, id, id, id);
    cgc_line(c, "for (v%d = lo; ukr%d && v%d < hi; v%d++) {", kv, id, kv, kv);
    c->ind++;
    char *ok = arena_printf(c->ar, "ukr%d", id);
    char *xa = emit_anchor(c, g.la, g.sa, g.va, g.bm, ok);
    char *xb = xa ? emit_anchor(c, g.lb, g.sb, g.vb, g.bn, ok) : NULL;
    if (!xa || !xb) return 0; /* cgc_fail recorded why */
    c->divs = 0;              /* a division by zero: err set, the generic loop reports it */
    cgc_line(c, "if (err) ukr%d = 0;", id);
    cgc_line(c, "const int64_t oa = %s, ob = %s;", xa, xb);
    cgc_line(c, "if (v%d == lo) { ua%d = oa; ub%d = ob; }", kv, id, id);
    cgc_line(c, "else if (v%d == lo + 1) { uak%d = oa - ua%d; ubk%d = ob - ub%d; }", kv, id, id, id, id);
    cgc_line(c, "else if (oa != ua%d + (v%d - lo) * uak%d || ob != ub%d + (v%d - lo) * ubk%d) ukr%d = 0;", id, kv, id,
             id, kv, id, id);
    c->ind--;
    cgc_line(c, "}");
    cgc_line(c, "err = 0;");
    cgc_line(c, "if (ukr%d) {", id);
    c->ind++;
    cgc_line(c, "for (int64_t q = 0; q < %lld; q++)", (long long)n);
    cgc_line(c, "    %s(r%d + %s[3 * q], s%d + ua%d + %s[3 * q + 1], s%d + ub%d + %s[3 * q + 2], uak%d, ubk%d, hi - lo);",
             fn, g.acc->id, tb, sa->id, id, tb, sbv->id, id, tb, id, id);
    cgc_line(c, "v%d = hi;", kv);
    c->ind--;
    cgc_line(c, "} else {");
    return 1;
}
