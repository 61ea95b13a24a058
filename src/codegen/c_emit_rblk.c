/* c_emit_rblk.c — the register-blocked f32 micro-kernel for the reduction
 * loop of the CPU plan of two-operand reductions (convolutions and the
 * like: docs/sched.md, "Convolutions on the CPU"; lower.c lower_rblk).
 *
 * Recognises, at generation time, a `for j` whose body is exactly
 *
 *     ai = add KB, OFF                 KB: i64 register [BM, 1], OFF an int expression
 *     a  = gather AF, ai -> register f32[BM, 1] mask KL      AF: global f32, rank 1
 *     b  = load_global BF[BOFF] -> register f32[BN]          BF: global f32, rank 1
 *     ab = broadcast a -> register f32[BM, BN] layout L dim 1
 *     bb = broadcast b -> register f32[BM, BN] layout L dim 0
 *     p  = mul ab, bb          (either order)
 *     add acc, p -> acc        (acc f32 with layout L)
 *
 * where L gives every thread a contiguous TM x TN row-major micro-tile,
 * a and b hold every coordinate, and ai, a, b, ab, bb, p are read nowhere
 * else. Per slot s of acc the loop computes acc[s] += AF[KB[row(s)] + OFF]
 * * BF[BOFF + col(s)] (masked rows and reads past BF's end: 0).
 *
 * Emitted: a run-time test (step 1; every row live; KB an arithmetic
 * progression KB[0] + i * d; the flat tensors dense; per j every A row
 * and the whole B run inside the tensors); if it holds, the loop runs in
 * chunks of RB_CHUNK steps whose offsets are tabulated first, each
 * thread's micro-tile through one static function holding it in vector
 * registers (as c_emit_gemm.c's micro-kernel, multiply-adds fused);
 * otherwise the generic loop runs. */
#include <stdlib.h>
#include <string.h>

#include "codegen/c_int.h"

enum { RB_CHUNK = 256 };

typedef struct rb_match {
    const tile_stmt *sai, *sa, *sb;
    const tile_value *kb, *kl, *acc, *af, *bf;
    int64_t bm, bn, tm, tn, nthr, nloc;
} rb_match;

/* A rank-1 global f32 tensor operand with no view steps (want_index: one
 * index step). */
static const tile_value *flat_global(const tile_operand *o, int want_index)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_GLOBAL || o->v->type.rank != 1 ||
        !cgc_is_f32(o->v->type.dt))
        return NULL;
    if (want_index ? o->nsteps != 1 || o->steps[0].kind != TILE_STEP_INDEX : o->nsteps != 0) return NULL;
    return o->v;
}

/* Slot of the lowest owner of every coordinate (n of them) of a rank-r
 * register table whose dims multiply to n; 0 when one has none. */
static int owners(cgc *c, const cgc_tab *t, int64_t n, int64_t *slot)
{
    for (int64_t i = 0; i < n; i++) slot[i] = -1;
    for (int64_t q = 0; q < t->ns; q++) {
        const int32_t *x = &t->coord[q * t->rank];
        if (x[0] < 0) continue;
        int64_t e = 0;
        for (int d = 0; d < t->rank; d++) e = e * t->dims[d] + x[d];
        if (e < n && slot[e] < 0) slot[e] = q;
    }
    for (int64_t i = 0; i < n; i++)
        if (slot[i] < 0) return 0;
    (void)c;
    return 1;
}

static int rb_match_for(cgc *c, const tile_stmt *f, rb_match *g)
{
    memset(g, 0, sizeof *g);
    const tile_block *b = f->body;
    if (!b || b->n != 7) return 0;
    const tile_stmt *const *it = (const tile_stmt *const *)b->items;
    if (!cgc_is_instr(it[0], TILE_I_ADD) || !cgc_is_instr(it[1], TILE_I_GATHER) || !cgc_is_instr(it[2], TILE_I_LOAD_GLOBAL) ||
        !cgc_is_instr(it[3], TILE_I_BROADCAST) || !cgc_is_instr(it[4], TILE_I_BROADCAST) || !cgc_is_instr(it[5], TILE_I_MUL) ||
        !cgc_is_instr(it[6], TILE_I_ADD))
        return 0;
    for (int i = 0; i < 6; i++)
        if (!it[i]->instr.result) return 0;
    /* ai = add KB, OFF */
    const tile_instr *iai = &it[0]->instr;
    const tile_value *ai = iai->result;
    if (iai->nargs != 2 || iai->mask || !(g->kb = cgc_whole_reg(&iai->args[0])) || iai->args[1].v || !iai->args[1].scalar)
        return 0;
    if (g->kb->type.dt.kind != TILE_DT_INT || g->kb->type.dt.bits != 64 || ai->type.dt.bits != 64) return 0;
    /* a = gather AF, ai mask KL */
    const tile_instr *ia = &it[1]->instr;
    const tile_value *a = ia->result;
    if (ia->nargs != 2 || !(g->af = flat_global(&ia->args[0], 0)) || cgc_whole_reg(&ia->args[1]) != ai || !ia->mask ||
        !cgc_is_f32(a->type.dt))
        return 0;
    g->kl = ia->mask;
    /* b = load_global BF[BOFF] */
    const tile_instr *ib = &it[2]->instr;
    const tile_value *bv = ib->result;
    if (ib->nargs != 1 || !(g->bf = flat_global(&ib->args[0], 1)) || !cgc_is_f32(bv->type.dt) || ib->init) return 0;
    /* the outer product */
    const tile_instr *s3 = &it[3]->instr, *s4 = &it[4]->instr, *s5 = &it[5]->instr, *s6 = &it[6]->instr;
    if (s3->dim != 1 || s4->dim != 0 || cgc_whole_reg(&s3->args[0]) != a || cgc_whole_reg(&s4->args[0]) != bv) return 0;
    const tile_value *ab = s3->result, *bb = s4->result, *p = s5->result;
    const tile_value *m0 = cgc_whole_reg(&s5->args[0]), *m1 = cgc_whole_reg(&s5->args[1]);
    if (!((m0 == ab && m1 == bb) || (m0 == bb && m1 == ab))) return 0;
    const tile_value *acc = cgc_whole_reg(&s6->args[0]);
    if (s6->result || !s6->has_dst || s6->dst.nsteps || s6->dst.v != acc || cgc_whole_reg(&s6->args[1]) != p) return 0;
    if (!acc || !cgc_is_f32(acc->type.dt) || !cgc_is_f32(ab->type.dt) || !cgc_is_f32(bb->type.dt) || !cgc_is_f32(p->type.dt)) return 0;
    const cgc_tab *tab = cgc_vtab(c, acc);
    if (!tab || tab->rank != 2) return 0;
    g->bm = tab->dims[0];
    g->bn = tab->dims[1];
    const cgc_tab *ta = cgc_vtab(c, a), *tb = cgc_vtab(c, bv), *tk = cgc_vtab(c, g->kb), *tl = cgc_vtab(c, g->kl),
                  *tai = cgc_vtab(c, ai);
    if (!ta || ta->rank != 2 || ta->dims[0] != g->bm || ta->dims[1] != 1) return 0;
    if (!tb || tb->rank != 1 || tb->dims[0] != g->bn) return 0;
    if (!cgc_same_coords(ta, tk) || !cgc_same_coords(ta, tl) || !cgc_same_coords(ta, tai)) return 0;
    int64_t *sl = arena_alloc(c->ar, sizeof(int64_t) * (size_t)(g->bm + g->bn));
    if (!owners(c, ta, g->bm, sl) || !owners(c, tb, g->bn, sl)) return 0;
    if (!cgc_same_coords(tab, cgc_vtab(c, ab)) || !cgc_same_coords(tab, cgc_vtab(c, bb)) || !cgc_same_coords(tab, cgc_vtab(c, p)))
        return 0;
    const tile_value *tmp[6] = {ai, a, bv, ab, bb, p};
    for (int i = 0; i < 6; i++)
        if (tmp[i] == acc || tmp[i] == g->kb || tmp[i] == g->kl) return 0;
    if (g->kb == acc || g->kl == acc) return 0;
    if (cgc_mentions(c->k->body, f, tmp, 6)) return 0;
    if (!cgc_tab_microtile(tab, &g->tm, &g->tn)) return 0;
    if (g->tm > 16 || g->tn > 64 || g->tm * g->tn > 256) return 0;
    g->nthr = tab->nthreads;
    g->nloc = tab->nlocals;
    g->sai = it[0];
    g->sa = it[1];
    g->sb = it[2];
    g->acc = acc;
    return 1;
}

int cgc_emit_rblk_for(cgc *c, const tile_stmt *f)
{
    rb_match g;
    if (getenv("TESSEL_CPU_NO_UKR") || !rb_match_for(c, f, &g)) return 0;
    int id = c->tmp++, kv = f->v->id;
    char *fn = arena_printf(c->ar, "tsl_rbk%d", id);
    cgc_ukr u = {.tm = g.tm, .tn = g.tn, .what = "over tabulated offsets",
                 .params = "const int64_t *ao, const int64_t *bo, int64_t ar, int64_t n",
                 .row_ptr = "const float *a%lld = a + %lld * ar;",
                 .step = "const int64_t ak = ao[k];\n        const float *bp = b + bo[k];", .a_row = "a%lld[ak]",
                 .a_mul = 1};
    cgc_emit_ukr(c, fn, &u);
    /* per row of A, the slots of KB and KL that own it; per thread, its
     * micro-tile's acc slot, row and column */
    const cgc_tab *ta = cgc_vtab(c, g.kb), *tl = cgc_vtab(c, g.kl), *tab = cgc_vtab(c, g.acc);
    int64_t *rows = arena_alloc(c->ar, sizeof(int64_t) * (size_t)(g.bm * 2));
    int64_t *sk = arena_alloc(c->ar, sizeof(int64_t) * (size_t)g.bm), *sm = arena_alloc(c->ar, sizeof(int64_t) * (size_t)g.bm);
    if (!owners(c, ta, g.bm, sk) || !owners(c, tl, g.bm, sm)) return 0;
    for (int64_t i = 0; i < g.bm; i++) {
        rows[2 * i] = sk[i];
        rows[2 * i + 1] = sm[i];
    }
    int64_t *thr = arena_alloc(c->ar, sizeof(int64_t) * (size_t)(g.nthr * 3));
    for (int64_t t = 0; t < g.nthr; t++) {
        const int32_t *o = &tab->coord[t * g.nloc * 2];
        thr[t * 3] = t * g.nloc;
        thr[t * 3 + 1] = o[0];
        thr[t * 3 + 2] = o[1];
    }
    const char *trow = cgc_emit_i32_table(c, "rows of A: KB slot, KL slot", rows, g.bm * 2);
    const char *tthr = cgc_emit_i32_table(c, "micro-tiles: acc slot, row, column", thr, g.nthr * 3);
    const char *kb = cgc_rname(c, g.kb), *kl = cgc_rname(c, g.kl), *af = cgc_gname(c, g.af), *bf = cgc_gname(c, g.bf);
    cgc_line(c, "/* the loop is an f32 micro-kernel (%lld x %lld per thread) when the checks allow */", (long long)g.tm,
             (long long)g.tn);
    cgc_line(c, "int rb%d = step == 1 && hi > lo && %s_s0 == 1 && %s_s0 == 1;", id, af, bf);
    cgc_line(c, "const int64_t rk%d = %s[%s[0]], rd%d = %lld > 1 ? %s[%s[2]] - rk%d : 0;", id, kb, trow, id,
             (long long)g.bm, kb, trow, id);
    cgc_line(c, "for (int64_t i = 0; rb%d && i < %lld; i++)", id, (long long)g.bm);
    cgc_line(c, "    if (!%s[%s[2 * i + 1]] || %s[%s[2 * i]] != rk%d + i * rd%d) rb%d = 0;", kl, trow, kb, trow, id, id, id);
    cgc_line(c, "const int64_t rlo%d = rk%d + (rd%d < 0 ? %lld * rd%d : 0), rhi%d = rk%d + (rd%d > 0 ? %lld * rd%d : 0);",
             id, id, id, (long long)(g.bm - 1), id, id, id, id, (long long)(g.bm - 1), id);
    char *xa = cgc_cx(c, g.sai->instr.args[1].scalar);
    char *xb = cgc_cx(c, g.sb->instr.args[0].steps[0].idx[0]);
    c->divs = 0; /* a division by zero: err set, the generic loop reports it */
    cgc_line(c, "for (v%d = lo; rb%d && v%d < hi; v%d++) {", kv, id, kv, kv);
    c->ind++;
    cgc_line(c, "const int64_t oa = %s, ob = %s;", xa, xb);
    cgc_line(c, "if (err || rlo%d + oa < 0 || rhi%d + oa >= %s_d0 || ob < 0 || ob > %s_d0 - %lld) rb%d = 0;", id, id, af,
             bf, (long long)g.bn, id);
    c->ind--;
    cgc_line(c, "}");
    cgc_line(c, "err = 0;");
    cgc_line(c, "if (rb%d) {", id);
    c->ind++;
    cgc_line(c, "int64_t ao%d[%d], bo%d[%d];", id, RB_CHUNK, id, RB_CHUNK);
    cgc_line(c, "for (int64_t c0 = lo; c0 < hi; c0 += %d) {", RB_CHUNK);
    c->ind++;
    cgc_line(c, "const int64_t c1 = hi - c0 < %d ? hi : c0 + %d;", RB_CHUNK, RB_CHUNK);
    cgc_line(c, "for (v%d = c0; v%d < c1; v%d++) {", kv, kv, kv);
    cgc_line(c, "    ao%d[v%d - c0] = rk%d + %s;", id, kv, id, xa);
    cgc_line(c, "    bo%d[v%d - c0] = %s;", id, kv, xb);
    cgc_line(c, "}");
    cgc_line(c, "for (int64_t q = 0; q < %lld; q++)", (long long)g.nthr);
    cgc_line(c, "    %s(%s + %s[3 * q], %s + %s[3 * q + 1] * rd%d, %s + %s[3 * q + 2], ao%d, bo%d, rd%d, c1 - c0);", fn,
             cgc_rname(c, g.acc), tthr, af, tthr, id, bf, tthr, id, id, id);
    c->ind--;
    cgc_line(c, "}");
    cgc_line(c, "v%d = hi;", kv);
    c->ind--;
    cgc_line(c, "} else {");
    return 1;
}
