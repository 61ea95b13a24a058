/* c_emit_gemm.c — prints the cpu.ukr.f32 atom (target/cpu.c): the
 * register-blocked f32 micro-kernel over the contraction strategy's k loop
 * (docs/sched.md, "CPU (f32)"), which the CPU plan asks for by writing the
 * atom on the loop's accumulating add. Which loops fit is the target's
 * (target/ukr.c); here is only how the selected atom prints.
 *
 * Per slot s of acc the loop computes acc[s] += SA(row(s), kk) *
 * SB(kk, col(s)) for kk in order — what the interpreter computes, with
 * each multiply-add fused. Emitted: a run-time pre-pass over kk that
 * checks step 1, every shared access in bounds (the generic code would
 * report the error instead) and both operands' offsets linear in kk; if it
 * holds, each thread's micro-tile runs through one static function with TM
 * x TN/VW vector accumulators held in locals for the whole loop (VW the
 * widest cpu.vec row the generated C is compiled for); otherwise the
 * generic loop runs. Threads are visited column-panel by column-panel so a
 * thread column's B panel stays in L1. */
#include <stdlib.h>
#include <string.h>

#include "codegen/c_int.h"

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

int cgc_emit_gemm_for(cgc *c, const tile_stmt *f, const target_ukr *gp)
{
    const target_ukr g = *gp;
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
