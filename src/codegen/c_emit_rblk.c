/* c_emit_rblk.c — prints the cpu.ukr.f32.gather atom (target/cpu.c): the
 * register-blocked f32 micro-kernel over the reduction loop of the CPU
 * plan of two-operand reductions (convolutions and the like: docs/sched.md,
 * "Convolutions on the CPU"; lower.c lower_rblk), which asks for it by
 * writing the atom on the loop's accumulating add. Which loops fit is the
 * target's (target/ukr.c); here is only how the selected atom prints.
 *
 * Per slot s of acc the loop computes acc[s] += AF[KB[row(s)] + OFF] *
 * BF[BOFF + col(s)] (masked rows and reads past BF's end: 0). Emitted: a
 * run-time test (step 1; every row live; KB an arithmetic progression
 * KB[0] + i * d; the flat tensors dense; per j every A row and the whole B
 * run inside the tensors); if it holds, the loop runs in chunks of
 * RB_CHUNK steps whose offsets are tabulated first, each thread's
 * micro-tile through one static function holding it in vector registers
 * (as c_emit_gemm.c's micro-kernel, multiply-adds fused); otherwise the
 * generic loop runs. */
#include <stdlib.h>
#include <string.h>

#include "codegen/c_int.h"

enum { RB_CHUNK = 256 };

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

int cgc_emit_rblk_for(cgc *c, const tile_stmt *f, const target_ukr *gp)
{
    const target_ukr g = *gp;
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
    char *xb = cgc_cx(c, g.slb->instr.args[0].steps[0].idx[0]);
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
