/* c_emit_ops.c — the C generator's emitters for block-level instructions:
 * transfers (loads, stores, copy_async), allocation, elementwise rows,
 * iota, gather/scatter, view, reductions, broadcast, shuffles, mma,
 * print. Each follows the interpreter's instruction of the same name
 * (src/tile/interp_ops.c, interp.c). */
#include <math.h>
#include <string.h>

#include "codegen/c_int.h"

/* ---- transfers ------------------------------------------------------------------------------ */

/* The leading coordinates' bounds test ("(uint64_t)f0 < g_d0 && ...")
 * and offset ("f0 * g_s0 + ...") of a flat run, both ending in their
 * joiner. */
static void flat_lead(cgc *c, const cgc_view *vw, strbuf *cond, strbuf *off)
{
    const char *g = cgc_gname(c, vw->v);
    for (int i = 0; i < vw->rank - 1; i++) {
        sb_printf(cond, "(uint64_t)f%d < (uint64_t)%s_d%d && ", i, g, i);
        sb_printf(off, "f%d * %s_s%d + ", i, g, i);
    }
}

/* A 1-D register tile whose slot i is element i (closed form) moved
 * to/from a global view without tilers: when the run lies inside the
 * tensor and its last stride is 1, opens `if (...) {` with `gp` the
 * run's first element and gives 1 (the caller writes the unmasked loop,
 * then flat_partial's branch, `} else {`, the generic loop and `}`). */
static int flat_begin(cgc *c, const cgc_view *vw, int t)
{
    const cgc_tab *tb = &c->tabv[t];
    if (!tb->ident || tb->rank != 1 || vw->v->type.space != TILE_GLOBAL || vw->rank < 1 ||
        cgc_dt_coded(vw->v->type.dt))
        return 0;
    for (int i = 0; i < vw->rank; i++)
        for (int s = 0; s < vw->nchain[i]; s++)
            if (vw->tiler[i][s]) return 0;
    const char *g = cgc_gname(c, vw->v);
    int last = vw->rank - 1;
    strbuf cond = {0}, off = {0};
    for (int i = 0; i < vw->rank; i++)
        cgc_line(c, "const int64_t f%d = %s;", i, cgc_view_map(c, vw, i, "(int64_t)0"));
    flat_lead(c, vw, &cond, &off);
    cgc_line(c, "if (%sf%d >= 0 && f%d + %lld <= %s_d%d && %s_s%d == 1) {", sb_str(&cond), last, last,
             (long long)tb->ns, g, last, g, last);
    cgc_line(c, "    %s *const gp = &%s[%sf%d];", cgc_mem_ctype(vw->v->type.dt), g, sb_str(&off), last);
    sb_free(&cond);
    sb_free(&off);
    return 1;
}

/* After flat_begin's branch: the run that starts inside the tensor and
 * ends past it (the last block of a dimension, or a tensor smaller than
 * the tile) as `} else if (...) {` with `gp` its first element and `fn`
 * (< the tile's slots) the elements inside; the caller moves slots
 * [0, fn) unmasked. The generic loop's per-slot test compiles to masked
 * vector loads, and a masked-off lane on a page not mapped in makes each
 * one a microcode assist: C = A + B on 4 floats took 40 us a call. */
static void flat_partial(cgc *c, const cgc_view *vw)
{
    const char *g = cgc_gname(c, vw->v);
    int last = vw->rank - 1;
    strbuf cond = {0}, off = {0};
    flat_lead(c, vw, &cond, &off);
    cgc_line(c, "} else if (%sf%d >= 0 && f%d < %s_d%d && %s_s%d == 1) {", sb_str(&cond), last, last, g, last, g,
             last);
    cgc_line(c, "    %s *const gp = &%s[%sf%d];", cgc_mem_ctype(vw->v->type.dt), g, sb_str(&off), last);
    cgc_line(c, "    const int64_t fn = %s_d%d - f%d;", g, last, last);
    sb_free(&cond);
    sb_free(&off);
}

/* A 2-D register tile that enumerates its [D0, D1] elements row-major
 * (ident) or column-major (tident: a transposing view) moved to/from a
 * global view without tilers: when the tile lies inside the tensor and the
 * last stride is 1, opens `if (...) {` and the loop over its D0 rows, with
 * `gp` the row's first element, `a` the row and `b` the column, and gives
 * the register slot of (a, b) (the caller writes the inner loop over b,
 * then closes with block2_end). NULL when the tile is not of that form. */
static const char *block2_begin(cgc *c, const cgc_view *vw, int t)
{
    const cgc_tab *tb = &c->tabv[t];
    if ((!tb->ident && !tb->tident) || tb->rank != 2 || vw->v->type.space != TILE_GLOBAL || vw->rank < 2 ||
        cgc_dt_coded(vw->v->type.dt))
        return NULL;
    for (int i = 0; i < vw->rank; i++)
        for (int s = 0; s < vw->nchain[i]; s++)
            if (vw->tiler[i][s]) return NULL;
    const char *g = cgc_gname(c, vw->v);
    int rk = vw->rank, r0 = rk - 2, r1 = rk - 1;
    long long D0 = (long long)tb->dims[0], D1 = (long long)tb->dims[1];
    strbuf cond = {0}, off = {0};
    for (int i = 0; i < rk; i++) {
        cgc_line(c, "const int64_t f%d = %s;", i, cgc_view_map(c, vw, i, "(int64_t)0"));
        if (i < r0) {
            sb_printf(&cond, "(uint64_t)f%d < (uint64_t)%s_d%d && ", i, g, i);
            sb_printf(&off, "f%d * %s_s%d + ", i, g, i);
        }
    }
    cgc_line(c, "if (%sf%d >= 0 && f%d + %lld <= %s_d%d && f%d >= 0 && f%d + %lld <= %s_d%d && %s_s%d == 1) {",
             sb_str(&cond), r0, r0, D0, g, r0, r1, r1, D1, g, r1, g, r1);
    cgc_line(c, "    for (int64_t a = 0; a < %lld; a++) {", D0);
    cgc_line(c, "        %s *const gp = &%s[%s(f%d + a) * %s_s%d + f%d];", cgc_mem_ctype(vw->v->type.dt), g,
             sb_str(&off), r0, g, r0, r1);
    cgc_line(c, "        TSL_IVDEP");
    sb_free(&cond);
    sb_free(&off);
    c->ind += 2;
    return tb->ident ? arena_printf(c->ar, "a * %lld + b", D1) : arena_printf(c->ar, "b * %lld + a", D0);
}

static void block2_end(cgc *c)
{
    c->ind -= 2;
    cgc_line(c, "    }");
    cgc_line(c, "} else {");
    c->ind++;
}

/* A load_global of f32/f64 into a 1-D register tile that nothing writes
 * (neither the tile, in place or through a view sharing its registers,
 * nor the global tensor anywhere in the kernel) reads the tensor where it
 * lies: the tile's name becomes a pointer (c.c declares it without const)
 * set to the run's first element on the fast path, so its consumers read
 * memory once instead of a copy and the copy. */
static int load_by_ref(cgc *c, const tile_stmt *s, const tile_value *d, const cgc_view *src)
{
    tile_dtype md = src->v->type.dt, rd = d->type.dt;
    return s->instr.op == TILE_I_LOAD_GLOBAL && !s->instr.decomp && !s->instr.has_dst && tile_dtype_eq(md, rd) &&
           md.kind == TILE_DT_FLOAT && (md.bits == 32 || md.bits == 64) && !c->mut[d->id] && !c->mut[src->v->id] &&
           !c->in_decomp;
}

static int expr_uses(const tile_expr *e, const tile_value *v)
{
    return e && (e->v == v || expr_uses(e->a, v) || expr_uses(e->b, v));
}

/* Rows ahead a by-reference load prefetches (4096^2 f32 column sums, 2 KB
 * runs 16 KB apart: the hardware prefetcher stops at each page). */
enum { CGC_PREFETCH_ROWS = 4 };

/* A by-reference load A[i, e...] of a rank >= 2 tensor inside `for i`
 * (step 1; e not using i) reads the same run of row i + 1 next: prefetch
 * the run CGC_PREFETCH_ROWS rows ahead (inside the fast path's `if`). */
static void load_prefetch(cgc *c, const tile_operand *o, const cgc_view *src, int64_t ns)
{
    const tile_value *i = c->loopvar;
    if (!i || o->nsteps != 1 || o->steps[0].kind != TILE_STEP_INDEX || o->steps[0].n != src->v->type.rank ||
        src->v->type.rank < 2)
        return;
    const tile_step *st = &o->steps[0];
    if (st->idx[0]->kind != TILE_E_VALUE || st->idx[0]->v != i) return;
    for (int k = 1; k < st->n; k++)
        if (expr_uses(st->idx[k], i)) return;
    int64_t bytes = ns * (src->v->type.dt.bits / 8);
    const char *g = cgc_gname(c, src->v);
    cgc_line(c, "    if (f0 + %d < %s_d0)", CGC_PREFETCH_ROWS, g);
    cgc_line(c, "        for (int64_t p = 0; p < %lld; p += 64) TSL_PREFETCH((const char *)(gp + %d * %s_s0) + p);",
             (long long)bytes, CGC_PREFETCH_ROWS, g);
}

/* A by-reference load's tile back in its own storage (off the fast path). */
static void load_own(cgc *c, const tile_value *d)
{
    cgc_line(c, "%s = (%s *)(ws + %lld);", cgc_rname(c, d), cgc_reg_ctype(d->type.dt),
             (long long)(cgc_align_up(c->smem, 64) + c->roff[d->id]));
}

/* flat_partial's body for a load: slots [0, fn) from gp, the rest the fill. */
static void load_partial(cgc *c, const tile_value *d, tile_dtype md, int64_t ns, int by_ref)
{
    c->ind++;
    if (by_ref) load_own(c, d);
    cgc_line(c, "for (int64_t i = 0; i < fn; i++) %s[i] = %s;", cgc_rname(c, d),
             cgc_load_conv(c, md, d->type.dt, "gp[i]"));
    cgc_line(c, "for (int64_t i = fn; i < %lld; i++) %s[i] = fill;", (long long)ns, cgc_rname(c, d));
    c->ind--;
}

void cgc_emit_load(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    cgc_view src;
    const tile_value *d = cgc_reg_dst(c, s);
    if (!d || !cgc_view_of(c, &in->args[0], &src)) return;
    int want = in->op == TILE_I_LOAD_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
    if ((int)src.v->type.space != want) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "%s reads a %s tensor; '%s' is %s", tile_op_info_of(in->op)->name,
                tile_space_name((tile_space)want), src.v->name, tile_space_name(src.v->type.space));
        return;
    }
    int t = cgc_rt(c, d);
    if (!cgc_view_fit(c, &src, t)) return;
    const cgc_tab *tb = &c->tabv[t];
    tile_dtype md = src.v->type.dt, rd = d->type.dt;
    if (want == TILE_GLOBAL)
        cgc_line(c, "const %s fill = %s;", cgc_reg_ctype(rd),
                 in->init ? cgc_num_to_reg(c, rd, in->init) : cgc_rnd(c, rd, "0.0"));
    int flat = want == TILE_GLOBAL && flat_begin(c, &src, t);
    const char *slot2 = want == TILE_GLOBAL && !flat ? block2_begin(c, &src, t) : NULL;
    if (flat && load_by_ref(c, s, d, &src)) {
        /* the run lies inside the tensor: the register array is the run
         * itself (no copy); outside, its own storage again */
        c->ref[d->id] = 1;
        load_prefetch(c, &in->args[0], &src, tb->ns);
        cgc_line(c, "    %s = gp;", cgc_rname(c, d));
        flat_partial(c, &src);
        load_partial(c, d, md, tb->ns, 1);
        cgc_line(c, "} else {");
        c->ind++;
        load_own(c, d);
    } else if (flat) {
        cgc_line(c, "    TSL_IVDEP");
        cgc_line(c, "    for (int64_t i = 0; i < %lld; i++) %s[i] = %s;", (long long)tb->ns, cgc_rname(c, d),
                 cgc_load_conv(c, md, rd, "gp[i]"));
        flat_partial(c, &src);
        load_partial(c, d, md, tb->ns, 0);
        cgc_line(c, "} else {");
        c->ind++;
    } else if (slot2) {
        cgc_line(c, "for (int64_t b = 0; b < %lld; b++) %s[%s] = %s;", (long long)tb->dims[1], cgc_rname(c, d),
                 slot2, cgc_load_conv(c, md, rd, "gp[b]"));
        block2_end(c);
        flat = 1;
    }
    cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    cgc_line(c, "if (!(%s)) {", cgc_tab_valid(c, t, "i"));
    cgc_line(c, "    %s[i] = %s;", cgc_rname(c, d), cgc_pad_value(rd));
    cgc_line(c, "    continue;");
    cgc_line(c, "}");
    char **cs = cgc_emit_coords(c, &src, t, "i", "c");
    if (want == TILE_GLOBAL) {
        cgc_line(c, "%s[i] = (%s) ? %s : fill;", cgc_rname(c, d), cgc_global_inb(c, &src, cs),
          cgc_load_conv(c, md, rd, cgc_global_elem(c, &src, cs)));
    } else {
        char *e = cgc_shared_elem(c, &src, cs, 0);
        cgc_line(c, "%s[i] = %s;", cgc_rname(c, d), cgc_load_conv(c, md, rd, e));
    }
    c->ind--;
    cgc_line(c, "}");
    if (flat) {
        c->ind--;
        cgc_line(c, "}");
    }
}

/* store_global of a register tile whose threads hold disjoint row-major
 * micro-tiles (the contraction accumulator): per thread and row, the
 * row's part inside the global tensor as one unmasked loop (contiguous
 * when the last stride is 1), in slot order as the generic store. 0 when
 * the layout is not of that form. */
static int store_microtiles(cgc *c, const tile_value *r, const cgc_view *dst, int t)
{
    const cgc_tab *tb = &c->tabv[t];
    int64_t tm, tn;
    if (!cgc_tab_microtile(tb, &tm, &tn) || dst->rank < 2) return 0;
    for (int64_t q = 0; q < tb->ns; q++)
        if (!tb->own[q]) return 0;
    for (int i = 0; i < dst->rank; i++)
        for (int s = 0; s < dst->nchain[i]; s++)
            if (dst->tiler[i][s]) return 0;
    int64_t *org = arena_alloc(c->ar, sizeof(int64_t) * (size_t)(2 * tb->nthreads + 1));
    for (int64_t q = 0; q < tb->nthreads; q++) {
        org[2 * q] = tb->coord[q * tb->nlocals * 2];
        org[2 * q + 1] = tb->coord[q * tb->nlocals * 2 + 1];
    }
    const char *ot = cgc_emit_i32_table(c, "micro-tile origins (row, column) per thread", org, 2 * tb->nthreads);
    const char *g = cgc_gname(c, dst->v);
    int rk = dst->rank, lead = rk - 2;
    cgc_line(c, "for (int64_t q = 0; q < %lld; q++) {", (long long)tb->nthreads);
    c->ind++;
    cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tm);
    c->ind++;
    strbuf off = {0}, bad = {0};
    for (int i = 0; i < rk; i++) {
        const char *x = i < lead ? "(int64_t)0"
                        : i == lead ? arena_printf(c->ar, "((int64_t)%s[2 * q] + i)", ot)
                                    : arena_printf(c->ar, "(int64_t)%s[2 * q + 1]", ot);
        cgc_line(c, "const int64_t c%d = %s;", i, cgc_view_map(c, dst, i, x));
        if (i < rk - 1) {
            sb_printf(&bad, " || (uint64_t)c%d >= (uint64_t)%s_d%d", i, g, i);
            sb_printf(&off, "c%d * %s_s%d + ", i, g, i);
        }
    }
    cgc_line(c, "if (0%s) continue;", sb_str(&bad));
    cgc_line(c, "int64_t ja = c%d < 0 ? -c%d : 0, jb = %s_d%d - c%d;", rk - 1, rk - 1, g, rk - 1, rk - 1);
    cgc_line(c, "if (jb > %lld) jb = %lld;", (long long)tn, (long long)tn);
    char *val = cgc_store_conv(c, r->type.dt, dst->v->type.dt,
                               arena_printf(c->ar, "%s[q * %lld + i * %lld + j]", cgc_rname(c, r),
                                            (long long)tb->nlocals, (long long)tn));
    cgc_line(c, "for (int64_t j = ja; j < jb; j++) %s[%s(c%d + j) * %s_s%d] = %s;", g, sb_str(&off), rk - 1, g,
             rk - 1, val);
    sb_free(&off);
    sb_free(&bad);
    c->ind--;
    cgc_line(c, "}");
    c->ind--;
    cgc_line(c, "}");
    return 1;
}

void cgc_emit_store(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    cgc_view dst;
    const tile_value *r = cgc_reg_arg(c, &in->args[0]);
    if (!r) return;
    if (!in->has_dst) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "store needs '-> destination'");
        return;
    }
    if (!cgc_view_of(c, &in->dst, &dst)) return;
    int want = in->op == TILE_I_STORE_GLOBAL ? TILE_GLOBAL : TILE_SHARED;
    if ((int)dst.v->type.space != want) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "%s writes a %s tensor; '%s' is %s", tile_op_info_of(in->op)->name,
                tile_space_name((tile_space)want), dst.v->name, tile_space_name(dst.v->type.space));
        return;
    }
    int coded = cgc_dt_coded(dst.v->type.dt);
    if (coded && want != TILE_GLOBAL) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "store_shared: '%s' is a shared tensor of a packed or low-bit float dtype",
                 dst.v->name);
        return;
    }
    int t = cgc_rt(c, r);
    if (!cgc_view_fit(c, &dst, t)) return;
    const cgc_tab *tb = &c->tabv[t];
    if (want == TILE_GLOBAL && !coded && !tb->tident && store_microtiles(c, r, &dst, t)) return;
    int flat = want == TILE_GLOBAL && flat_begin(c, &dst, t);
    const char *slot2 = want == TILE_GLOBAL && !flat ? block2_begin(c, &dst, t) : NULL;
    if (flat) {
        cgc_line(c, "    TSL_IVDEP");
        cgc_line(c, "    for (int64_t i = 0; i < %lld; i++) gp[i] = %s;", (long long)tb->ns,
                 cgc_store_conv(c, r->type.dt, dst.v->type.dt, arena_printf(c->ar, "%s[i]", cgc_rname(c, r))));
        flat_partial(c, &dst);
        cgc_line(c, "    for (int64_t i = 0; i < fn; i++) gp[i] = %s;",
                 cgc_store_conv(c, r->type.dt, dst.v->type.dt, arena_printf(c->ar, "%s[i]", cgc_rname(c, r))));
        cgc_line(c, "} else {");
        c->ind++;
    } else if (slot2) {
        cgc_line(c, "for (int64_t b = 0; b < %lld; b++) gp[b] = %s;", (long long)tb->dims[1],
                 cgc_store_conv(c, r->type.dt, dst.v->type.dt, arena_printf(c->ar, "%s[%s]", cgc_rname(c, r), slot2)));
        block2_end(c);
        flat = 1;
    }
    cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    cgc_line(c, "if (!(%s)) continue;", cgc_tab_owner(c, t, "i"));
    char **cs = cgc_emit_coords(c, &dst, t, "i", "c");
    char *val = cgc_store_conv(c, r->type.dt, dst.v->type.dt, arena_printf(c->ar, "%s[i]", cgc_rname(c, r)));
    if (want == TILE_GLOBAL && coded) {
        cgc_line(c, "if (%s) %s;", cgc_global_inb(c, &dst, cs), cgc_global_put(c, &dst, cs, val));
    } else if (want == TILE_GLOBAL) {
        cgc_line(c, "if (%s) %s = %s;", cgc_global_inb(c, &dst, cs), cgc_global_elem(c, &dst, cs), val);
    } else {
        char *e = cgc_shared_elem(c, &dst, cs, 1);
        cgc_line(c, "%s = %s;", e, val);
    }
    c->ind--;
    cgc_line(c, "}");
    if (flat) {
        c->ind--;
        cgc_line(c, "}");
    }
}

/* copy_async global -> shared: the tile is the shared tensor, its slice
 * S[i, ...] of the trailing dims, or a tile of a tiled view; taken from
 * the global tensor right-aligned at the source's offsets, zero past the
 * bounds (interp exec_copy_async). */
#define CGC_PREFETCH_ROWS 4

/* The copy loops over the box. mode 0: every shared access checked and
 * every global read masked (the interpreter's rules); 1: the caller has
 * proven the whole box in bounds, plain assignments; 2: as 1 with the
 * global tensor's last stride 1 (so the inner loop vectorizes). */
static void copy_loops(cgc *c, const cgc_view *src, const cgc_view *dst, const int64_t *box, int trank, int lead,
                       int mode)
{
    int sl = src->rank - trank; /* right-aligned: leading source dims get 0 */
    for (int i = 0; i < trank; i++) {
        cgc_line(c, "for (int64_t e%d = 0; e%d < %lld; e%d++) {", i, i, (long long)box[i], i);
        c->ind++;
        if (mode == 2 && i == trank - 2 && sl >= 0) {
            /* rows of a block are far apart in the global tensor (a page
             * each for 1024 floats): fetch a later row's lines ahead */
            strbuf sb = {0};
            const char *g = cgc_gname(c, src->v);
            for (int j = 0; j < src->rank; j++) {
                const char *x = j < sl ? "(int64_t)0"
                                : j - sl == i ? arena_printf(c->ar, "(e%d + %d)", i, CGC_PREFETCH_ROWS)
                                : j - sl == trank - 1 ? "(int64_t)0" : arena_printf(c->ar, "e%d", j - sl);
                sb_printf(&sb, "%s%s * %s_s%d", j ? " + " : "", cgc_view_map(c, src, j, x), g, j);
            }
            int per = 64 / (src->v->type.dt.bits / 8 ? src->v->type.dt.bits / 8 : 1);
            cgc_line(c, "#if defined(__GNUC__)");
            cgc_line(c, "if (e%d + %d < %lld)", i, CGC_PREFETCH_ROWS, (long long)box[i]);
            cgc_line(c, "    for (int64_t p = 0; p < %lld; p += %d) __builtin_prefetch(&%s[%s + p]);",
                     (long long)box[trank - 1], per, g, sb_str(&sb));
            cgc_line(c, "#endif");
            sb_free(&sb);
        }
    }
    char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    char **cd = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    for (int i = 0; i < dst->rank; i++) {
        cd[i] = arena_printf(c->ar, "cd%d", i);
        cgc_line(c, "const int64_t %s = %s;", cd[i],
          cgc_view_map(c, dst, i, i < lead ? "(int64_t)0" : arena_printf(c->ar, "e%d", i - lead)));
    }
    for (int i = 0; i < src->rank; i++) {
        cs[i] = arena_printf(c->ar, "cs%d", i);
        cgc_line(c, "const int64_t %s = %s;", cs[i],
          cgc_view_map(c, src, i, i < sl ? "(int64_t)0" : arena_printf(c->ar, "e%d", i - sl)));
    }
    tile_dtype sd = src->v->type.dt, dd = dst->v->type.dt;
    if (mode) {
        const char *g = cgc_gname(c, src->v);
        strbuf sb = {0};
        sb_printf(&sb, "%s[", g);
        if (!src->rank) sb_puts(&sb, "0");
        for (int i = 0; i < src->rank; i++) {
            if (mode == 2 && i == src->rank - 1) sb_printf(&sb, "%s%s", i ? " + " : "", cs[i]);
            else sb_printf(&sb, "%s%s * %s_s%d", i ? " + " : "", cs[i], g, i);
        }
        sb_puts(&sb, "]");
        cgc_line(c, "%s = %s;", cgc_shared_elem_at(c, dst, cd), sb_str(&sb));
        sb_free(&sb);
    } else {
        char *e = cgc_shared_elem(c, dst, cd, 1);
        char *val;
        if (tile_dtype_eq(sd, dd))
            val = arena_printf(c->ar, "(%s) ? %s : (%s)0", cgc_global_inb(c, src, cs), cgc_global_elem(c, src, cs),
                               cgc_mem_ctype(dd));
        else
            val = cgc_dbl_to_mem(c, dd, arena_printf(c->ar, "(%s) ? %s : 0.0", cgc_global_inb(c, src, cs),
                                                 cgc_mem_to_dbl(c, sd, cgc_global_elem(c, src, cs))));
        cgc_line(c, "%s = %s;", e, val);
    }
    for (int i = 0; i < trank; i++) {
        c->ind--;
        cgc_line(c, "}");
    }
}

/* The copy when the box is inside the shared tensor but not inside the
 * global one (an edge block): per row of the last dim, the part inside
 * the global tensor [a, b) is copied without masks and the rest is
 * zeroed. Chains without tilers: coordinate = offset + e. */
static void copy_rows(cgc *c, const cgc_view *src, const cgc_view *dst, const int64_t *box, int trank, int lead)
{
    int last = trank - 1, sl = src->rank - trank, sr = src->rank - 1;
    const char *g = cgc_gname(c, src->v);
    for (int i = 0; i < last; i++) {
        cgc_line(c, "for (int64_t e%d = 0; e%d < %lld; e%d++) {", i, i, (long long)box[i], i);
        c->ind++;
    }
    char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    char **cd = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    strbuf rowok = {0};
    for (int i = 0; i < sr; i++) {
        cs[i] = arena_printf(c->ar, "cs%d", i);
        cgc_line(c, "const int64_t %s = %s;", cs[i],
          cgc_view_map(c, src, i, i < sl ? "(int64_t)0" : arena_printf(c->ar, "e%d", i - sl)));
        sb_printf(&rowok, " || (uint64_t)%s >= (uint64_t)%s_d%d", cs[i], g, i);
    }
    cgc_line(c, "const int64_t o%d = %s;", sr, cgc_view_map(c, src, sr, "(int64_t)0"));
    cgc_line(c, "int64_t ea = 0, eb = %lld;", (long long)box[last]);
    cgc_line(c, "if (0%s) eb = 0;", sb_str(&rowok));
    sb_free(&rowok);
    cgc_line(c, "if (o%d < 0) ea = -o%d;", sr, sr);
    cgc_line(c, "if (o%d + eb > %s_d%d) eb = %s_d%d - o%d;", sr, g, sr, g, sr, sr);
    cgc_line(c, "if (eb < 0) eb = 0;");
    cgc_line(c, "if (ea > eb) ea = eb;");
    static const char *const range[3][2] = {{"0", "ea"}, {"ea", "eb"}, {"eb", NULL}};
    for (int part = 0; part < 3; part++) {
        cgc_line(c, "for (int64_t e%d = %s; e%d < %s; e%d++) {", last, range[part][0], last,
                 range[part][1] ? range[part][1] : arena_printf(c->ar, "%lld", (long long)box[last]), last);
        c->ind++;
        for (int i = 0; i < dst->rank; i++) {
            cd[i] = arena_printf(c->ar, "cd%d", i);
            cgc_line(c, "const int64_t %s = %s;", cd[i],
              cgc_view_map(c, dst, i, i < lead ? "(int64_t)0" : arena_printf(c->ar, "e%d", i - lead)));
        }
        if (part == 1) {
            strbuf sb = {0};
            sb_printf(&sb, "%s[", g);
            for (int i = 0; i < sr; i++) sb_printf(&sb, "%s * %s_s%d + ", cs[i], g, i);
            sb_printf(&sb, "(o%d + e%d) * %s_s%d]", sr, last, g, sr);
            cgc_line(c, "%s = %s;", cgc_shared_elem_at(c, dst, cd), sb_str(&sb));
            sb_free(&sb);
        } else {
            cgc_line(c, "%s = (%s)0;", cgc_shared_elem_at(c, dst, cd), cgc_mem_ctype(dst->v->type.dt));
        }
        c->ind--;
        cgc_line(c, "}");
    }
    for (int i = 0; i < last; i++) {
        c->ind--;
        cgc_line(c, "}");
    }
}

static int chain_plain(const cgc_view *vw)
{
    for (int i = 0; i < vw->rank; i++)
        for (int s = 0; s < vw->nchain[i]; s++)
            if (vw->tiler[i][s]) return 0;
    return 1;
}

void cgc_emit_copy_async(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    cgc_view src, dst;
    if (!in->has_dst) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "copy_async needs '-> destination'");
        return;
    }
    if (!cgc_view_of(c, &in->args[0], &src) || !cgc_view_of(c, &in->dst, &dst)) return;
    if (src.v->type.space != TILE_GLOBAL || dst.v->type.space != TILE_SHARED) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "copy_async copies global -> shared");
        return;
    }
    if (cgc_dt_coded(src.v->type.dt)) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "copy_async: '%s' holds packed or low-bit float codes (copy its bytes)",
                 src.v->name);
        return;
    }
    /* leading dims fixed by an untiled index (S[i, ...]) */
    int lead = 0;
    if (in->dst.nsteps == 1 && in->dst.steps[0].kind == TILE_STEP_INDEX) lead = in->dst.steps[0].n;
    if (lead >= dst.rank) {
        cgc_fail(c, TSL_ERR_SHAPE, "copy_async: %d indices leave nothing of '%s'", lead, dst.v->name);
        return;
    }
    int trank = dst.rank - lead;
    int64_t box[CGC_MAX_RANK];
    for (int i = 0; i < trank; i++) box[i] = dst.ext[lead + i] >= 0 ? dst.ext[lead + i] : dst.dims[lead + i];
    if (!cgc_view_fit_dims(c, &src, box, trank)) return;
    if (!tile_dtype_eq(src.v->type.dt, dst.v->type.dt) || !chain_plain(&src) || !chain_plain(&dst) || src.rank < 1) {
        copy_loops(c, &src, &dst, box, trank, lead, 0);
        return;
    }
    /* coordinates are offset + e (no tilers): the box is inside both
     * tensors iff its first and last corners are, and then no element
     * needs a check or a mask */
    int sl = src.rank - trank;
    cgc_line(c, "int inb = 1, dinb = 1;");
    for (int i = 0; i < dst.rank; i++) {
        const char *e0 = "(int64_t)0", *e1 = i < lead ? e0 : arena_printf(c->ar, "(int64_t)%lld", (long long)(box[i - lead] - 1));
        cgc_line(c, "if ((uint64_t)%s >= %lldu || (uint64_t)%s >= %lldu) dinb = 0;", cgc_view_map(c, &dst, i, e0),
                 (long long)dst.dims[i], cgc_view_map(c, &dst, i, e1), (long long)dst.dims[i]);
    }
    const char *g = cgc_gname(c, src.v);
    for (int i = 0; i < src.rank; i++) {
        const char *e0 = "(int64_t)0", *e1 = i < sl ? e0 : arena_printf(c->ar, "(int64_t)%lld", (long long)(box[i - sl] - 1));
        cgc_line(c, "if ((uint64_t)%s >= (uint64_t)%s_d%d || (uint64_t)%s >= (uint64_t)%s_d%d) inb = 0;",
                 cgc_view_map(c, &src, i, e0), g, i, cgc_view_map(c, &src, i, e1), g, i);
    }
    cgc_line(c, "inb &= dinb;");
    cgc_line(c, "if (inb && %s_s%d == 1) {", g, src.rank - 1);
    c->ind++;
    copy_loops(c, &src, &dst, box, trank, lead, 2);
    c->ind--;
    cgc_line(c, "} else if (inb) {");
    c->ind++;
    copy_loops(c, &src, &dst, box, trank, lead, 1);
    c->ind--;
    if (sl >= 0) {
        cgc_line(c, "} else if (dinb) {");
        c->ind++;
        copy_rows(c, &src, &dst, box, trank, lead);
        c->ind--;
    }
    cgc_line(c, "} else {");
    c->ind++;
    copy_loops(c, &src, &dst, box, trank, lead, 0);
    c->ind--;
    cgc_line(c, "}");
}

/* ---- register instructions ------------------------------------------------------------------ */

void cgc_emit_alloc(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *r = in->result;
    if (!r) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "alloc needs a result name");
        return;
    }
    if (r->type.space == TILE_REGISTER) {
        const cgc_tab *tb = &c->tabv[cgc_rt(c, r)];
        const char *v = in->init ? cgc_num_to_reg(c, r->type.dt, in->init) : cgc_pad_value(r->type.dt);
        cgc_line(c, "for (int64_t i = 0; i < %lld; i++) %s[i] = %s;", (long long)tb->ns, cgc_rname(c, r), v);
        return;
    }
    if (r->type.space != TILE_SHARED) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "alloc of a global tensor");
        return;
    }
    if (!in->init) return; /* shared: whatever the bytes were */
    cgc_view vw;
    tile_operand o = tile_operand_tensor((tile_value *)r);
    if (!cgc_view_of(c, &o, &vw)) return;
    cgc_line(c, "const %s fill = %s;", cgc_mem_ctype(r->type.dt),
             cgc_store_conv(c, r->type.dt, r->type.dt, cgc_num_to_reg(c, r->type.dt, in->init)));
    char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
    for (int i = 0; i < vw.rank; i++) {
        cs[i] = arena_printf(c->ar, "e%d", i);
        cgc_line(c, "for (int64_t e%d = 0; e%d < %lld; e%d++) {", i, i, (long long)vw.dims[i], i);
        c->ind++;
    }
    cgc_line(c, "%s = fill;", cgc_shared_elem(c, &vw, cs, 1));
    for (int i = 0; i < vw.rank; i++) {
        c->ind--;
        cgc_line(c, "}");
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
    const char *itg; /* over int64_t x, y when every operand is an integer; NULL: none */
} cgc_ew;

static const cgc_ew cgc_ew_table[] = {
    {TILE_I_COPY, CGC_ARITH, "x", "x", "x"},
    {TILE_I_CAST, CGC_ARITH, "x", "x", "x"},
    {TILE_I_NEG, CGC_ARITH, "-x", "-x", "(int64_t)(0 - (uint64_t)x)"},
    {TILE_I_ABS, CGC_ARITH, "fabs(x)", "fabsf(x)", "x < 0 ? (int64_t)(0 - (uint64_t)x) : x"},
    {TILE_I_EXP, CGC_ARITH, "(double)tsl_expf((float)x)", "tsl_expf(x)", NULL},
    {TILE_I_EXP2, CGC_ARITH, "(double)exp2f((float)x)", "exp2f(x)", NULL},
    {TILE_I_LOG, CGC_ARITH, "(double)tsl_logf((float)x)", "tsl_logf(x)", NULL},
    {TILE_I_SQRT, CGC_ARITH, "(double)sqrtf((float)x)", "sqrtf(x)", NULL},
    {TILE_I_RSQRT, CGC_ARITH, "(double)(1.0f / sqrtf((float)x))", "1.0f / sqrtf(x)", NULL},
    {TILE_I_TANH, CGC_ARITH, "(double)tsl_tanhf((float)x)", "tsl_tanhf(x)", NULL},
    {TILE_I_SIGMOID, CGC_ARITH, "(double)tsl_sigmoidf((float)x)", "tsl_sigmoidf(x)", NULL},
    {TILE_I_RELU, CGC_ARITH, "x > 0 ? x : 0.0", "x > 0 ? x : 0.0f", "x > 0 ? x : 0"},
    {TILE_I_ERF, CGC_ARITH, "(double)tsl_erff((float)x)", "tsl_erff(x)", NULL},
    {TILE_I_ADD, CGC_ARITH, "x + y", "x + y", "(int64_t)((uint64_t)x + (uint64_t)y)"},
    {TILE_I_SUB, CGC_ARITH, "x - y", "x - y", "(int64_t)((uint64_t)x - (uint64_t)y)"},
    {TILE_I_MUL, CGC_ARITH, "x * y", "x * y", "(int64_t)((uint64_t)x * (uint64_t)y)"},
    {TILE_I_DIV, CGC_IDIV, "x / y", "x / y", "x / y"},
    {TILE_I_MAX, CGC_ARITH, "tsl_maxn(x, y)", "tsl_maxnf(x, y)", "x > y ? x : y"},
    {TILE_I_MIN, CGC_ARITH, "tsl_minn(x, y)", "tsl_minnf(x, y)", "x < y ? x : y"},
    {TILE_I_MOD, CGC_IDIV, "(double)fmodf((float)x, (float)y)", "fmodf(x, y)", "x % y"},
    {TILE_I_POW, CGC_ARITH, "(double)powf((float)x, (float)y)", "powf(x, y)", NULL},
    {TILE_I_NOT, CGC_LOGIC, "!(x != 0)", NULL, "!x"},
    {TILE_I_AND, CGC_LOGIC, "(x != 0) && (y != 0)", NULL, "x && y"},
    {TILE_I_OR, CGC_LOGIC, "(x != 0) || (y != 0)", NULL, "x || y"},
    {TILE_I_LT, CGC_CMP, "x < y", NULL, "x < y"},
    {TILE_I_LE, CGC_CMP, "x <= y", NULL, "x <= y"},
    {TILE_I_GT, CGC_CMP, "x > y", NULL, "x > y"},
    {TILE_I_GE, CGC_CMP, "x >= y", NULL, "x >= y"},
    {TILE_I_EQ, CGC_CMP, "x == y", NULL, "x == y"},
    {TILE_I_NE, CGC_CMP, "x != y", NULL, "x != y"},
    {TILE_I_SELECT, CGC_SELECT, "x != 0 ? y : z", "x != 0 ? y : z", "x != 0 ? y : z"},
    {TILE_I_FMA, CGC_ARITH, "fma(x, y, z)", "fmaf(x, y, z)", NULL}, /* f64, f32; 16-bit: emit_elementwise */
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
        *val = cgc_cnum(c, o->scalar);
        return 1;
    }
    if (o->v->kind == TILE_V_SCALAR) {
        *val = arena_printf(c->ar, "(double)v%d", o->v->id);
        return 1;
    }
    const tile_value *x = cgc_reg_arg(c, o);
    if (!x) return 0;
    const cgc_tab *a = &c->tabv[cgc_rt(c, x)], *b = &c->tabv[cgc_rt(c, like)];
    if (!dist_layout_equal(a->lay, b->lay) || a->rank != b->rank ||
        memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank)) {
        cgc_fail(c, TSL_ERR_SHAPE,
                "'%s' is not laid out like the result (same shape and layout needed; use copy "
                "through shared memory to change layout)", x->name);
        return 0;
    }
    *val = arena_printf(c->ar, "%s[i]", cgc_rname(c, x));
    *flt = is_fltreg(x->type.dt);
    *t = x;
    return 1;
}

/* The integer form of an elementwise row: operands as int64_t (uint64_t
 * for u64 operands), the result wrapped to the dtype (bool: != 0). */
static void emit_ew_int(cgc *c, const tile_stmt *s, const cgc_ew *row, const tile_value *d,
                        const tile_value *const *tv, const tile_value *first)
{
    const tile_instr *in = &s->instr;
    tile_dtype dt = d->type.dt;
    const cgc_tab *tb = &c->tabv[cgc_rt(c, d)];
    const char *names = "xyz";
    char *v[3];
    for (int a = 0; a < in->nargs; a++) {
        const tile_operand *o = &in->args[a];
        if (tv[a]) v[a] = arena_printf(c->ar, "(int64_t)%s[i]", cgc_rname(c, tv[a]));
        else if (o->v) v[a] = arena_printf(c->ar, "v%d", o->v->id);
        else v[a] = cgc_tmp_int(c, o->scalar);
        /* a scalar is converted to the operands' dtype first (not for casts;
         * a select condition to bool) */
        if (!tv[a] && in->op != TILE_I_CAST) {
            if (row->kind == CGC_SELECT && a == 0) v[a] = arena_printf(c->ar, "(int64_t)((%s) != 0)", v[a]);
            else if (first) v[a] = arena_printf(c->ar, "(int64_t)%s", cgc_wrap(c, first->type.dt, v[a]));
        }
    }
    int zerodiv = in->op == TILE_I_DIV || in->op == TILE_I_MOD;
    int id = zerodiv ? cgc_rterr(c, TSL_ERR_RUNTIME, "integer division by zero") : 0;
    /* u64 operands compute as uint64_t: comparisons, max, min, / and %
     * are unsigned there (the other widths fit int64_t's positive half) */
    tile_dtype odt = first ? first->type.dt : dt;
    int u64 = odt.kind == TILE_DT_UINT && odt.bits == 64;
    const char *itg = row->itg;
    if (u64 && (in->op == TILE_I_ABS || in->op == TILE_I_RELU)) itg = "x";
    /* a tensor divided by one scalar: when every |x| and |y| is below
     * 2^52, the truncated double quotient is the exact integer quotient
     * (its rounding error, below |x/y| 2^-53 < 1/(2|y|), cannot cross an
     * integer), several times cheaper than a 64-bit idiv per lane */
    int fdiv = zerodiv && tv[0] && !tv[1] && !u64;
    if (fdiv) {
        cgc_line(c, "const int64_t dy = %s;", v[1]);
        cgc_line(c, "int small = dy != 0 && dy != -1 && dy > -((int64_t)1 << 52) && dy < ((int64_t)1 << 52);");
        cgc_line(c, "if (small)");
        cgc_line(c, "    for (int64_t i = 0; i < %lld; i++) small &= (uint64_t)%s + ((uint64_t)1 << 52) < ((uint64_t)1 << 53);",
                 (long long)tb->ns, v[0]);
        cgc_line(c, "if (small) {");
        c->ind++;
        cgc_line(c, "const double fy = (double)dy;");
        cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
        cgc_line(c, "    const int64_t x = %s, y = dy, q = (int64_t)((double)x / fy);", v[0]);
        cgc_line(c, "    (void)y;");
        cgc_line(c, "    %s[i] = %s;", cgc_rname(c, d),
                 cgc_wrap(c, dt, in->op == TILE_I_DIV ? "q" : "(int64_t)((uint64_t)x - (uint64_t)q * (uint64_t)y)"));
        cgc_line(c, "}");
        c->ind--;
        cgc_line(c, "} else {");
        c->ind++;
    }
    cgc_line(c, "TSL_IVDEP");
    cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    for (int a = 0; a < in->nargs; a++) cgc_line(c, "const %s %c = %s;", u64 ? "uint64_t" : "int64_t", names[a], v[a]);
    if (zerodiv && u64) {
        cgc_line(c, "if (y == 0) {");
        cgc_line(c, "    if (%s) return %d;", cgc_tab_valid(c, cgc_rt(c, d), "i"), id);
        cgc_line(c, "    %s[i] = 0;", cgc_rname(c, d));
        cgc_line(c, "    continue;");
        cgc_line(c, "}");
        cgc_line(c, "%s[i] = %s;", cgc_rname(c, d), cgc_wrap(c, dt, itg));
    } else if (zerodiv) {
        /* a zero divisor in a slot inside the tensor is an error; x / -1 is
         * taken as a negation (INT64_MIN / -1 wraps) */
        cgc_line(c, "if (y == 0) {");
        cgc_line(c, "    if (%s) return %d;", cgc_tab_valid(c, cgc_rt(c, d), "i"), id);
        cgc_line(c, "    %s[i] = 0;", cgc_rname(c, d));
        cgc_line(c, "    continue;");
        cgc_line(c, "}");
        cgc_line(c, "%s[i] = %s;", cgc_rname(c, d),
                 cgc_wrap(c, dt, arena_printf(c->ar, "y == -1 ? %s : %s",
                                              in->op == TILE_I_DIV ? "(int64_t)(0 - (uint64_t)x)" : "0", row->itg)));
    } else {
        cgc_line(c, "%s[i] = %s;", cgc_rname(c, d), cgc_wrap(c, dt, itg));
    }
    c->ind--;
    cgc_line(c, "}");
    if (fdiv) {
        c->ind--;
        cgc_line(c, "}");
    }
}

void cgc_emit_elementwise(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *d = cgc_reg_dst(c, s);
    if (!d) return;
    const cgc_ew *row = NULL;
    for (size_t i = 0; i < TSL_COUNTOF(cgc_ew_table); i++)
        if (cgc_ew_table[i].op == in->op) row = &cgc_ew_table[i];
    if (!row || in->nargs < 1 || in->nargs > 3) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "no elementwise emitter for '%s'", tile_op_info_of(in->op)->name);
        return;
    }
    char *v[3] = {NULL, NULL, NULL};
    int fl[3] = {1, 1, 1}, n = in->nargs;
    const tile_value *tv[3] = {NULL, NULL, NULL}, *first = NULL;
    for (int a = 0; a < n; a++) {
        if (!ew_operand(c, &in->args[a], d, &v[a], &fl[a], &tv[a])) return;
        if (tv[a] && !first && !(row->kind == CGC_SELECT && a == 0)) first = tv[a];
    }
    /* the operands' dtype: the first tensor operand's (select: a or b),
     * else the result's; a scalar operand is converted to it first (a
     * select condition to bool), casts excepted (interp exec_elementwise) */
    tile_dtype dt = d->type.dt, odt = first ? first->type.dt : dt;
    int cast = in->op == TILE_I_CAST;
    for (int a = 0; a < n && !cast; a++)
        if (!tv[a]) {
            if (row->kind == CGC_SELECT && a == 0) v[a] = arena_printf(c->ar, "(double)((%s) != 0)", v[a]);
            else v[a] = arena_printf(c->ar, "(double)%s", cgc_rnd(c, odt, v[a]));
        }
    /* integer path: exact int64 arithmetic, wrapped to the result's width
     * (the interpreter computes in double: the same below 2^53) */
    int intpath = row->itg && (is_intreg(dt) || dt.kind == TILE_DT_BOOL || row->kind == CGC_CMP);
    for (int a = 0; a < n && intpath; a++) {
        const tile_operand *o = &in->args[a];
        if (tv[a]) intpath = is_intreg(tv[a]->type.dt) || tv[a]->type.dt.kind == TILE_DT_BOOL;
        else if (o->v) intpath = o->v->kind == TILE_V_SCALAR && !(tile_value_is_typed_scalar(o->v) &&
                                                                 o->v->type.dt.kind == TILE_DT_FLOAT);
        else intpath = cgc_int_expr(o->scalar);
    }
    if (intpath) {
        emit_ew_int(c, s, row, d, tv, first);
        return;
    }
    /* f64 operands: the math functions in double, as C's exp() on a double */
    const char *f64 = NULL;
    if (odt.kind == TILE_DT_FLOAT && odt.bits == 64) {
        static const struct { tile_op op; const char *e; } f64rows[] = {
            {TILE_I_POW, "pow(x, y)"}, {TILE_I_EXP, "exp(x)"}, {TILE_I_EXP2, "exp2(x)"},
            {TILE_I_LOG, "log(x)"}, {TILE_I_SQRT, "sqrt(x)"}, {TILE_I_RSQRT, "1.0 / sqrt(x)"}, {TILE_I_TANH, "tanh(x)"},
            {TILE_I_SIGMOID, "1.0 / (1.0 + exp(-x))"}, {TILE_I_ERF, "erf(x)"}, {TILE_I_MOD, "fmod(x, y)"},
        };
        for (size_t k = 0; k < TSL_COUNTOF(f64rows); k++)
            if (f64rows[k].op == in->op) f64 = f64rows[k].e;
    }
    /* fma rounds once: fmaf on f32 operands (held as double when a scalar
     * is), tsl_fma16 (base/fma16.h, the interpreter's text) on f16/bf16 */
    cgc_ew fma_row;
    if (in->op == TILE_I_FMA) {
        fma_row = *row;
        if (odt.bits == 32) fma_row.dbl = "(double)fmaf((float)x, (float)y, (float)z)";
        if (odt.bits == 16)
            fma_row.dbl = fma_row.flt = arena_printf(c->ar, "tsl_fma16(x, y, z, %d, %d)", odt.man, 1 - odt.bias);
        row = &fma_row;
    }
    int flt = row->flt && is_fltreg(dt) && !f64;
    /* (a select's condition may be bool: 0 and 1 are exact in float) */
    for (int a = row->kind == CGC_SELECT ? 1 : 0; a < n; a++) flt &= fl[a];
    const cgc_tab *tb = &c->tabv[cgc_rt(c, d)];
    const char *names = "xyz";
    int zerodiv = row->kind == CGC_IDIV && is_intreg(dt);
    int id = zerodiv ? cgc_rterr(c, TSL_ERR_RUNTIME, "integer division by zero") : 0;
    const char *valid = zerodiv ? cgc_tab_valid(c, cgc_rt(c, d), "i") : NULL;
    cgc_line(c, "TSL_IVDEP");
    cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    for (int a = 0; a < n; a++) cgc_line(c, "const %s %c = %s;", flt ? "float" : "double", names[a], v[a]);
    if (flt) {
        const char *e = arena_printf(c->ar, "(%s)", row->flt);
        cgc_line(c, "%s[i] = %s;", cgc_rname(c, d), dt.bits == 32 ? e : cgc_rnd(c, dt, e));
    } else if (zerodiv) {
        /* C semantics on integers: truncating division, remainder with the
         * sign of x; a zero divisor in a slot inside the tensor is an error */
        cgc_line(c, "if (y == 0) {");
        cgc_line(c, "    if (%s) return %d;", valid, id);
        cgc_line(c, "    %s[i] = 0;", cgc_rname(c, d));
        cgc_line(c, "    continue;");
        cgc_line(c, "}");
        cgc_line(c, "%s[i] = %s;", cgc_rname(c, d),
          cgc_rnd(c, dt, in->op == TILE_I_DIV ? "trunc(x / y)" : "(double)((int64_t)x % (y == -1 ? 1 : (int64_t)y))"));
    } else {
        const char *e = arena_printf(c->ar, "(%s)", f64 ? f64 : row->dbl);
        if (row->kind == CGC_CMP || row->kind == CGC_LOGIC) {
            cgc_line(c, "%s[i] = (%s)%s;", cgc_rname(c, d), cgc_reg_ctype(dt), e);
        } else {
            /* arithmetic on f16/bf16/f32 happens in f32, then rounds to the dtype */
            if (!cast && row->kind != CGC_SELECT && dt.kind == TILE_DT_FLOAT && dt.bits <= 32)
                e = arena_printf(c->ar, "(double)(float)%s", e);
            cgc_line(c, "%s[i] = %s;", cgc_rname(c, d), cgc_rnd(c, dt, e));
        }
    }
    c->ind--;
    cgc_line(c, "}");
}

/* iota [OFF] dim D: each element is its coordinate along D plus OFF. */
void cgc_emit_iota(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *d = cgc_reg_dst(c, s);
    if (!d) return;
    const cgc_tab *tb = &c->tabv[cgc_rt(c, d)];
    if (in->dim < 0 || in->dim >= tb->rank) {
        cgc_fail(c, TSL_ERR_SHAPE, "iota: dim %d of a rank-%d result", in->dim, tb->rank);
        return;
    }
    const char *off = in->nargs && in->args[0].scalar ? cgc_tmp_int(c, in->args[0].scalar) : "((int64_t)0)";
    int t = cgc_rt(c, d);
    cgc_line(c, "for (int64_t i = 0; i < %lld; i++)", (long long)tb->ns);
    cgc_line(c, "    %s[i] = !(%s) ? %s : %s;", cgc_rname(c, d), cgc_tab_valid(c, t, "i"), cgc_pad_value(d->type.dt),
             cgc_wrap(c, d->type.dt, arena_printf(c->ar, "%s + %s", cgc_tab_at(c, t, "i", in->dim), off)));
}

/* gather T, i... -> R [mask M] / scatter x -> T, i... [mask M]: per lane
 * (a slot inside the tensor), the element of global T at the indices; a
 * masked-off lane moves nothing (gather: 0); an index outside T's extent
 * is a run-time error naming the tensor, dim, index and bound. */
void cgc_emit_gather(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    int gather = in->op == TILE_I_GATHER;
    const tile_operand *top = gather ? &in->args[0] : in->has_dst ? &in->dst : NULL;
    const tile_value *lanes = gather ? cgc_reg_dst(c, s) : cgc_reg_arg(c, &in->args[0]);
    if (!lanes) return;
    if (!top || !top->v || top->v->kind != TILE_V_TENSOR || top->v->type.space != TILE_GLOBAL || top->nsteps) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "%s: the tensor must be a whole global tensor", gather ? "gather" : "scatter");
        return;
    }
    const tile_value *T = top->v;
    int r = T->type.rank, first = gather ? 1 : 1;
    if (in->nargs - first != r) {
        cgc_fail(c, TSL_ERR_SHAPE, "%s: %d indices for '%s' of rank %d", gather ? "gather" : "scatter",
                in->nargs - first, T->name, r);
        return;
    }
    char *idx[CGC_MAX_RANK];
    for (int j = 0; j < r; j++) {
        const tile_operand *o = &in->args[first + j];
        if (!o->v) {
            idx[j] = cgc_tmp_int(c, o->scalar);
        } else if (o->v->kind == TILE_V_SCALAR) {
            idx[j] = arena_printf(c->ar, "v%d", o->v->id);
        } else {
            char *val;
            int fl;
            const tile_value *t;
            if (!ew_operand(c, o, lanes, &val, &fl, &t)) return;
            if (!is_intreg(t->type.dt)) {
                cgc_fail(c, TSL_ERR_SEMANTIC, "index '%s' must be an integer tensor", t->name);
                return;
            }
            idx[j] = arena_printf(c->ar, "(int64_t)%s", val);
        }
    }
    const cgc_tab *tb = &c->tabv[cgc_rt(c, lanes)];
    const char *valid = cgc_tab_valid(c, cgc_rt(c, lanes), "i"), *g = cgc_gname(c, T);
    if (in->mask && (cgc_rt(c, in->mask) < 0 || !dist_layout_equal(c->tabv[cgc_rt(c, in->mask)].lay, tb->lay))) {
        cgc_fail(c, TSL_ERR_SHAPE, "mask '%s' must be laid out like the lanes", in->mask->name);
        return;
    }
    const char *live = in->mask ? arena_printf(c->ar, "(%s) && %s[i]", valid, cgc_rname(c, in->mask)) : valid;
    int ids[CGC_MAX_RANK];
    for (int j = 0; j < r; j++) {
        ids[j] = cgc_rterr(c, TSL_ERR_BOUNDS, "%s of '%s': index %%lld in dim %d is outside [0, %%lld)",
                           gather ? "gather" : "scatter", T->name, j);
        c->errs[ids[j] - 1].info = 1;
    }
    /* gather with scalar leading indices whose last index runs b0, b0 + 1,
     * ... over the slots (checked at run time: an iota, a column block)
     * inside the tensor: one contiguous read, masked lanes 0 */
    int contig = gather && r >= 1 && tb->ident && tb->ns > 0 && !cgc_dt_coded(T->type.dt);
    for (int j = 0; contig && j < r; j++) {
        const tile_operand *o = &in->args[first + j];
        int scalar = !o->v || o->v->kind == TILE_V_SCALAR;
        contig = j < r - 1 ? scalar : !scalar;
    }
    if (contig) {
        strbuf lead = {0};
        cgc_line(c, "int fast = %s_s%d == 1;", g, r - 1);
        for (int j = 0; j < r - 1; j++) {
            cgc_line(c, "if ((uint64_t)%s >= (uint64_t)%s_d%d) fast = 0;", idx[j], g, j);
            sb_printf(&lead, "%s * %s_s%d + ", idx[j], g, j);
        }
        cgc_line(c, "int64_t b0 = 0;");
        cgc_line(c, "{");
        cgc_line(c, "    const int64_t i = 0;");
        cgc_line(c, "    b0 = %s;", idx[r - 1]);
        cgc_line(c, "}");
        cgc_line(c, "if (b0 < 0 || b0 > %s_d%d - %lld) fast = 0;", g, r - 1, (long long)tb->ns);
        cgc_line(c, "int run = 1;");
        cgc_line(c, "for (int64_t i = 0; i < %lld; i++) run &= %s == b0 + i;", (long long)tb->ns, idx[r - 1]);
        cgc_line(c, "if (fast && run) {");
        c->ind++;
        cgc_line(c, "const %s *const gp = &%s[%sb0];", cgc_mem_ctype(T->type.dt), g, sb_str(&lead));
        cgc_line(c, "TSL_IVDEP");
        cgc_line(c, "for (int64_t i = 0; i < %lld; i++) %s[i] = %s ? %s : 0;", (long long)tb->ns,
                 cgc_rname(c, lanes), in->mask ? arena_printf(c->ar, "%s[i]", cgc_rname(c, in->mask)) : "1",
                 cgc_load_conv(c, T->type.dt, lanes->type.dt, "gp[i]"));
        c->ind--;
        cgc_line(c, "} else {");
        c->ind++;
        sb_free(&lead);
    }
    if (gather) {
        /* a branch-free loop (the bounds folded into a flag, so it can
         * vectorize), then, only when some live lane was out of range, a
         * scan for the first one (the interpreter's slot order) */
        strbuf inb = {0}, off = {0};
        for (int j = 0; j < r; j++) {
            sb_printf(&inb, "%s(uint64_t)x%d < (uint64_t)%s_d%d", j ? " && " : "", j, g, j);
            sb_printf(&off, "%sx%d * %s_s%d", j ? " + " : "", j, g, j);
        }
        if (!r) {
            sb_puts(&inb, "1");
            sb_puts(&off, "0"); /* a rank-0 tensor: its one element */
        }
        cgc_line(c, "int bad = 0;");
        cgc_line(c, "TSL_IVDEP");
        cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
        c->ind++;
        for (int j = 0; j < r; j++) cgc_line(c, "const int64_t x%d = %s;", j, idx[j]);
        cgc_line(c, "const int live = %s, inb = %s;", live, sb_str(&inb));
        cgc_line(c, "bad |= live & !inb;");
        cgc_line(c, "%s[i] = !(%s) ? %s : live && inb ? %s : 0;", cgc_rname(c, lanes), valid,
                 cgc_pad_value(lanes->type.dt),
                 cgc_load_conv(c, T->type.dt, lanes->type.dt,
                               cgc_dt_coded(T->type.dt)
                                   ? arena_printf(c->ar, "tsl_lbget(%s, %s, %d)", g, sb_str(&off), T->type.dt.bits)
                                   : arena_printf(c->ar, "%s[%s]", g, sb_str(&off))));
        c->ind--;
        cgc_line(c, "}");
        cgc_line(c, "if (bad)");
        cgc_line(c, "    for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
        c->ind += 2;
        cgc_line(c, "if (!(%s)) continue;", live);
        for (int j = 0; j < r; j++) {
            cgc_line(c, "const int64_t x%d = %s;", j, idx[j]);
            cgc_line(c, "if ((uint64_t)x%d >= (uint64_t)%s_d%d) {", j, g, j);
            cgc_line(c, "    info[0] = x%d;", j);
            cgc_line(c, "    info[1] = %s_d%d;", g, j);
            cgc_line(c, "    return %d;", ids[j]);
            cgc_line(c, "}");
        }
        c->ind -= 2;
        cgc_line(c, "    }");
        sb_free(&inb);
        sb_free(&off);
        if (contig) {
            c->ind--;
            cgc_line(c, "}");
        }
        return;
    }
    /* scatter: in slot order, stopping at the first bad index */
    cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    cgc_line(c, "if (!(%s)) continue;", live);
    strbuf off = {0};
    for (int j = 0; j < r; j++) {
        cgc_line(c, "const int64_t x%d = %s;", j, idx[j]);
        cgc_line(c, "if ((uint64_t)x%d >= (uint64_t)%s_d%d) {", j, g, j);
        cgc_line(c, "    info[0] = x%d;", j);
        cgc_line(c, "    info[1] = %s_d%d;", g, j);
        cgc_line(c, "    return %d;", ids[j]);
        cgc_line(c, "}");
        sb_printf(&off, "%sx%d * %s_s%d", j ? " + " : "", j, g, j);
    }
    if (!r) sb_puts(&off, "0"); /* a rank-0 tensor: its one element */
    char *sv = cgc_store_conv(c, lanes->type.dt, T->type.dt, arena_printf(c->ar, "%s[i]", cgc_rname(c, lanes)));
    if (cgc_dt_coded(T->type.dt)) cgc_line(c, "tsl_lbput(%s, %s, %d, %s);", g, sb_str(&off), T->type.dt.bits, sv);
    else cgc_line(c, "%s[%s] = %s;", g, sb_str(&off), sv);
    sb_free(&off);
    c->ind--;
    cgc_line(c, "}");
}

/* Bits of register value x of dtype t (interp elem_bits): floats their
 * encoding, integers their low `bits` bits. */
static char *elem_bits(cgc *c, tile_dtype t, const char *x)
{
    if (t.kind == TILE_DT_FLOAT) {
        cgc_line(c, "    %s m = %s;", cgc_mem_ctype(t), cgc_store_conv(c, t, t, x));
        cgc_line(c, "    uint64_t u = 0;");
        cgc_line(c, "    memcpy(&u, &m, sizeof m);");
        return "u";
    }
    if (t.bits >= 64) return arena_printf(c->ar, "(uint64_t)(int64_t)%s", x);
    return arena_printf(c->ar, "((uint64_t)(int64_t)%s & 0x%llxull)", x, (unsigned long long)((1ull << t.bits) - 1));
}

/* view: the same bits per thread reinterpreted as another dtype/layout
 * (Tilus: 3 x u8 = 4 x i6); a thread's slots form one bit stream, slot 0
 * in the lowest bits (interp exec_view). */
void cgc_emit_view(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (in->result && in->result->type.space == TILE_SHARED) return; /* an alias (plan_block) */
    const tile_value *x = cgc_reg_arg(c, &in->args[0]), *d = x ? cgc_reg_dst(c, s) : NULL;
    if (!d) return;
    const cgc_tab *tx = &c->tabv[cgc_rt(c, x)], *td = &c->tabv[cgc_rt(c, d)];
    tile_dtype xd = x->type.dt, dd = d->type.dt;
    if (!cgc_dt_reg_ok(xd) || !cgc_dt_reg_ok(dd)) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "view: sub-byte floating-point types are not encoded yet");
        return;
    }
    if (tx->nlocals * xd.bits != td->nlocals * dd.bits || tx->nthreads != td->nthreads) {
        cgc_fail(c, TSL_ERR_SHAPE, "view: each thread holds %lld bits of '%s' but %lld bits of the result",
                 (long long)(tx->nlocals * xd.bits), x->name, (long long)(td->nlocals * dd.bits));
        return;
    }
    if (tile_dtype_eq(xd, dd)) {
        /* same dtype, same slots per thread: slot l stays slot l, only the
         * layout's reading of it changes — the registers are copied as they
         * are, or shared (c.c plan_view_alias) */
        if (c->roff[d->id] == c->roff[x->id]) {
            if (c->ref[x->id]) {
                c->ref[d->id] = 1;
                cgc_line(c, "%s = (%s *)%s; /* %s shares the registers of %s */", cgc_rname(c, d),
                         cgc_reg_ctype(dd), cgc_rname(c, x), d->name, x->name);
                return;
            }
            cgc_line(c, "/* %s shares the registers of %s */", d->name, x->name);
            return;
        }
        cgc_line(c, "memmove(%s, %s, %lld);", cgc_rname(c, d), cgc_rname(c, x),
                 (long long)(td->ns * cgc_reg_size(dd)));
        return;
    }
    int64_t nb = tx->nlocals * xd.bits / 8 + 9;
    cgc_need_scratch(c, cgc_align_up(td->ns * cgc_reg_size(dd), 16) + nb + 64);
    cgc_line(c, "%s *const tmp = (%s *)scratch;", cgc_reg_ctype(dd), cgc_reg_ctype(dd));
    cgc_line(c, "unsigned char *const buf = (unsigned char *)scratch + %lld;",
             (long long)cgc_align_up(td->ns * cgc_reg_size(dd), 16));
    cgc_line(c, "for (int64_t th = 0; th < %lld; th++) {", (long long)tx->nthreads);
    c->ind++;
    cgc_line(c, "memset(buf, 0, %lld);", (long long)nb);
    cgc_line(c, "for (int64_t l = 0; l < %lld; l++) {", (long long)tx->nlocals);
    char *u = elem_bits(c, xd, arena_printf(c->ar, "%s[th * %lld + l]", cgc_rname(c, x), (long long)tx->nlocals));
    cgc_line(c, "    tsl_bits_put(buf, l * %d, %s, %d);", xd.bits, u, xd.bits);
    cgc_line(c, "}");
    cgc_line(c, "for (int64_t l = 0; l < %lld; l++) {", (long long)td->nlocals);
    cgc_line(c, "    const uint64_t u = tsl_bits_get(buf, l * %d, %d);", dd.bits, dd.bits);
    const char *dst = arena_printf(c->ar, "tmp[th * %lld + l]", (long long)td->nlocals);
    if (dd.kind == TILE_DT_FLOAT) {
        cgc_line(c, "    %s m;", cgc_mem_ctype(dd));
        cgc_line(c, "    memcpy(&m, &u, sizeof m);");
        cgc_line(c, "    %s = %s;", dst, cgc_load_conv(c, dd, dd, "m"));
    } else {
        cgc_line(c, "    %s = %s;", dst, cgc_wrap(c, dd, "(int64_t)u"));
    }
    cgc_line(c, "}");
    c->ind--;
    cgc_line(c, "}");
    cgc_line(c, "memcpy(%s, tmp, %lld);", cgc_rname(c, d), (long long)(td->ns * cgc_reg_size(dd)));
}

/* reduce.{sum,max,min} dim D (interp exec_reduce): per result coordinate,
 * the source slots (lowest owners, in slot order) accumulated in f32;
 * every owner of the result coordinate gets the value. */
void cgc_emit_reduce(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *x = cgc_reg_arg(c, &in->args[0]), *d = x ? cgc_reg_dst(c, s) : NULL;
    if (!d) return;
    const cgc_tab *tx = &c->tabv[cgc_rt(c, x)], *td = &c->tabv[cgc_rt(c, d)];
    int dim = in->dim, keep = td->rank == tx->rank;
    if (dim < 0 || dim >= tx->rank || (!keep && td->rank != tx->rank - 1)) {
        cgc_fail(c, TSL_ERR_SHAPE, "reduce: dim %d, input rank %d, result rank %d", dim, tx->rank, td->rank);
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
        cgc_fail(c, TSL_ERR_NOMEM, "out of memory");
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
    const char *ts = cgc_emit_i32_table(c, "reduce: first source of each group", starts32, td->ns + 1);
    const char *tl = cgc_emit_i32_table(c, "reduce: source slots by group, in slot order", list, n);
    const char *tg = cgc_emit_i32_table(c, "reduce: group of each result slot, -1 none", grp, td->ns);
    cgc_need_scratch(c, td->ns * 8 + 64);
    int f64 = x->type.dt.kind == TILE_DT_FLOAT && x->type.dt.bits == 64;
    const char *op = in->op == TILE_I_REDUCE_SUM ? (f64 ? "acc = acc + v;" : "acc = (float)(acc + v);")
                     : in->op == TILE_I_REDUCE_MAX ? "acc = tsl_maxn(acc, v);"
                                                   : "acc = tsl_minn(acc, v);";
    /* integers exactly: a sum wraps in 64 bits (to the width at the end),
     * u64 compares unsigned; a double would keep only 53 bits */
    int isint = cgc_dt_int(x->type.dt);
    const char *at = "double";
    if (isint) {
        at = x->type.dt.kind == TILE_DT_UINT && x->type.dt.bits == 64 ? "uint64_t" : "int64_t";
        if (in->op == TILE_I_REDUCE_SUM) op = "acc = (int64_t)((uint64_t)acc + (uint64_t)v);";
        if (in->op == TILE_I_REDUCE_MAX) op = "acc = v > acc ? v : acc;";
        if (in->op == TILE_I_REDUCE_MIN) op = "acc = v < acc ? v : acc;";
    }
    cgc_line(c, "%s *const acc_ = (%s *)scratch;", isint ? "int64_t" : "double", isint ? "int64_t" : "double");
    cgc_line(c, "for (int64_t g = 0; g < %lld; g++) {", (long long)td->ns);
    c->ind++;
    cgc_line(c, "if (%s[g] == %s[g + 1]) continue;", ts, ts);
    /* float-held sources: (float)((double)a + b) is a + b in float (double
     * has more than 2 x 24 + 2 bits, so the double rounding is exact), and
     * the dependent chain is 3x shorter */
    if (x->type.dt.kind == TILE_DT_FLOAT && x->type.dt.bits <= 32) {
        at = "float";
        op = in->op == TILE_I_REDUCE_SUM   ? "acc = acc + v;"
             : in->op == TILE_I_REDUCE_MAX ? "acc = tsl_maxnf(acc, v);"
                                           : "acc = tsl_minnf(acc, v);";
    }
    cgc_line(c, "%s acc = (%s)%s[%s[%s[g]]];", at, at, cgc_rname(c, x), tl, ts);
    cgc_line(c, "for (int32_t j = %s[g] + 1; j < %s[g + 1]; j++) {", ts, ts);
    cgc_line(c, "    const %s v = (%s)%s[%s[j]];", at, at, cgc_rname(c, x), tl);
    cgc_line(c, "    %s", op);
    cgc_line(c, "}");
    cgc_line(c, "acc_[g] = acc;");
    c->ind--;
    cgc_line(c, "}");
    cgc_line(c, "for (int64_t k = 0; k < %lld; k++)", (long long)td->ns);
    cgc_line(c, "    %s[k] = %s[k] < 0 ? %s : %s;", cgc_rname(c, d), tg, cgc_pad_value(d->type.dt),
             isint && cgc_dt_int(d->type.dt) ? cgc_wrap(c, d->type.dt, arena_printf(c->ar, "acc_[%s[k]]", tg))
                                             : cgc_rnd(c, d->type.dt, arena_printf(c->ar, "(double)acc_[%s[k]]", tg)));
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
void cgc_emit_broadcast(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *x = cgc_reg_arg(c, &in->args[0]), *d = x ? cgc_reg_dst(c, s) : NULL;
    if (!d) return;
    const cgc_tab *tx = &c->tabv[cgc_rt(c, x)], *td = &c->tabv[cgc_rt(c, d)];
    int dim = in->dim;
    if (dim < 0 || dim >= td->rank || (tx->rank != td->rank && tx->rank != td->rank - 1)) {
        cgc_fail(c, TSL_ERR_SHAPE, "broadcast: dim %d from rank %d to rank %d", dim, tx->rank, td->rank);
        return;
    }
    int64_t *src = malloc(sizeof *src * (size_t)(td->ns + 1));
    if (!src) {
        cgc_fail(c, TSL_ERR_NOMEM, "out of memory");
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
    /* every result slot the copy of one source slot, or of a source whose
     * slots all hold one value (a row scalar spread over a chunk in steps):
     * a fill of that value, no table, no scratch */
    int64_t one = td->ns ? src[0] : -1;
    for (int64_t k = 1; k < td->ns && one >= 0; k++)
        if (src[k] != one && !(c->uniform[x->id] && src[k] >= 0)) one = -1;
    if (one >= 0 && tile_dtype_eq(d->type.dt, x->type.dt) && !c->ref[d->id]) {
        free(src);
        cgc_line(c, "{");
        cgc_line(c, "    const %s v = %s[%lld];", cgc_reg_ctype(d->type.dt), cgc_rname(c, x), (long long)one);
        cgc_line(c, "    for (int64_t k = 0; k < %lld; k++) %s[k] = v;", (long long)td->ns, cgc_rname(c, d));
        cgc_line(c, "}");
        c->uniform[d->id] = !c->mut[d->id];
        return;
    }
    const char *tb = cgc_emit_i32_table(c, "broadcast: source slot of each result slot, -1 none", src, td->ns);
    free(src);
    cgc_need_scratch(c, td->ns * cgc_reg_size(d->type.dt) + 64);
    const char *ct = cgc_reg_ctype(d->type.dt);
    cgc_line(c, "%s *const tmp = (%s *)scratch;", ct, ct);
    cgc_line(c, "for (int64_t k = 0; k < %lld; k++)", (long long)td->ns);
    if (cgc_dt_int(d->type.dt) && cgc_dt_int(x->type.dt)) /* integers exactly */
        cgc_line(c, "    tmp[k] = %s[k] < 0 ? 0 : %s;", tb,
                 cgc_wrap(c, d->type.dt, arena_printf(c->ar, "(int64_t)%s[%s[k]]", cgc_rname(c, x), tb)));
    else
        cgc_line(c, "    tmp[k] = %s[k] < 0 ? %s : %s;", tb, cgc_rnd(c, d->type.dt, "NAN"),
                 cgc_rnd(c, d->type.dt, arena_printf(c->ar, "(double)%s[%s[k]]", cgc_rname(c, x), tb)));
    cgc_line(c, "memcpy(%s, tmp, %lld);", cgc_rname(c, d), (long long)(td->ns * cgc_reg_size(d->type.dt)));
}

/* shuffle.{xor,up,down,idx} x, k: per warp; out of range keeps its own. */
void cgc_emit_shuffle(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *x = cgc_reg_arg(c, &in->args[0]), *d = x ? cgc_reg_dst(c, s) : NULL;
    if (!d) return;
    if (!in->args[1].scalar) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "shuffle needs a lane operand");
        return;
    }
    const cgc_tab *tx = &c->tabv[cgc_rt(c, x)], *td = &c->tabv[cgc_rt(c, d)];
    if (tx->nthreads != td->nthreads || tx->nlocals != td->nlocals) {
        cgc_fail(c, TSL_ERR_SHAPE, "shuffle: the result must be laid out like the input");
        return;
    }
    const char *k = cgc_tmp_int(c, in->args[1].scalar);
    const char *from = in->op == TILE_I_SHUFFLE_XOR ? "lane ^ %s" : in->op == TILE_I_SHUFFLE_UP ? "lane - %s"
                       : in->op == TILE_I_SHUFFLE_DOWN ? "lane + %s" : "%s";
    cgc_need_scratch(c, tx->ns * cgc_reg_size(x->type.dt) + 64);
    const char *ct = cgc_reg_ctype(x->type.dt);
    cgc_line(c, "%s *const tmp = (%s *)scratch;", ct, ct);
    cgc_line(c, "for (int64_t th = 0; th < %lld; th++) {", (long long)tx->nthreads);
    c->ind++;
    cgc_line(c, "const int64_t lane = th %% 32, base = th - lane;");
    cgc_line(c, "int64_t from = %s;", arena_printf(c->ar, from, k));
    cgc_line(c, "if (from < 0 || from > 31 || base + from >= %lld) from = lane;", (long long)tx->nthreads);
    cgc_line(c, "for (int64_t l = 0; l < %lld; l++) tmp[th * %lld + l] = %s[(base + from) * %lld + l];",
      (long long)tx->nlocals, (long long)tx->nlocals, cgc_rname(c, x), (long long)tx->nlocals);
    c->ind--;
    cgc_line(c, "}");
    cgc_line(c, "memcpy(%s, tmp, %lld);", cgc_rname(c, d), (long long)(tx->ns * cgc_reg_size(x->type.dt)));
}

/* mma d = a . b + c over warp-level atoms (the target row the atom names,
 * m16n8k16 by default): each operand's layout is R . F (F the row's
 * fragment); warp w computes the C tiles R_C gives it from the A and B
 * tiles it holds (interp exec_mma). */
static int mma_split(cgc *c, const tile_value *t, const target_atom *at, int which, dist_layout *r)
{
    layout_err le = {{0}, 0};
    const dist_layout *f = target_atom_layout(at, which);
    const cgc_tab *tb = &c->tabv[cgc_rt(c, t)];
    if (tb->rank != 2 || tb->lay->rank != 2) {
        cgc_fail(c, TSL_ERR_SHAPE, "mma: '%s' must be a rank-2 register tensor", t->name);
        return 0;
    }
    if (!f || dist_layout_divide(r, tb->lay, f, &le)) {
        cgc_fail(c, TSL_ERR_SHAPE, "mma %s: %s operand '%s' has layout %s, which is not R.%s: %s",
                at->alias ? at->alias : at->name, which == 0 ? "A" : which == 1 ? "B" : "C", t->name, tb->text,
                at->layout[which], le.msg);
        return 0;
    }
    return 1;
}

/* The (row, col) of every (lane, slot) of one operand's fragment, as a table. */
static const char *frag_table(cgc *c, const target_atom *at, int which)
{
    const dist_layout *f = target_atom_layout(at, which);
    int64_t n = f->threads * f->locals, *v = arena_alloc(c->ar, sizeof(int64_t) * (size_t)(2 * n));
    for (int64_t l = 0; l < f->threads; l++)
        for (int64_t i = 0; i < f->locals; i++) target_frag_coord(at, which, (int)l, (int)i, &v[2 * (l * f->locals + i)],
                                                                  &v[2 * (l * f->locals + i) + 1]);
    static const char *const what[] = {"A", "B", "C"};
    return cgc_emit_i32_table(c, arena_printf(c->ar, "%s: (row, col) of each (lane, slot) of %s", at->name, what[which]), v,
                              2 * n);
}

void cgc_emit_mma(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *a = cgc_reg_arg(c, &in->args[0]), *b = a ? cgc_reg_arg(c, &in->args[1]) : NULL,
                     *cc = b ? cgc_reg_arg(c, &in->args[2]) : NULL, *d = cc ? cgc_reg_dst(c, s) : NULL;
    if (!d) return;
    tsl_dtype ta, tb_, tcd;
    int adt = tile_dtype_to_tsl(a->type.dt, &ta) ? TARGET_DT_ANY : (int)ta;
    int bdt = tile_dtype_to_tsl(b->type.dt, &tb_) ? TARGET_DT_ANY : (int)tb_;
    const target_atom *at = target_mma_resolve_ab(in->atom, adt, bdt,
                                                  tile_dtype_to_tsl(cc->type.dt, &tcd) ? TARGET_DT_ANY : (int)tcd, NULL);
    /* a dequantizing row (mma.q): B's codes as floats */
    int qb = at && at->dtype[TARGET_B] != at->dtype[TARGET_A];
    if (!at) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "mma atom '%s': no warp-level atom the C generator runs for these dtypes",
                 in->atom ? in->atom : "m16n8k16");
        return;
    }
    const cgc_tab *ta_ = &c->tabv[cgc_rt(c, a)], *tb = &c->tabv[cgc_rt(c, b)], *tc = &c->tabv[cgc_rt(c, cc)],
                  *td = &c->tabv[cgc_rt(c, d)];
    if (ta_->rank != 2 || tb->rank != 2 || tc->rank != 2 || ta_->dims[1] != tb->dims[0] ||
        ta_->dims[0] != tc->dims[0] || tb->dims[1] != tc->dims[1]) {
        cgc_fail(c, TSL_ERR_SHAPE, "mma: shapes do not agree");
        return;
    }
    if (!is_fltreg(a->type.dt) || !(is_fltreg(b->type.dt) || qb) || !is_fltreg(cc->type.dt) ||
        !is_fltreg(d->type.dt)) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "mma: operands must be f16, bf16 or f32 here");
        return;
    }
    dist_layout ra, rb, rc;
    if (!mma_split(c, a, at, TARGET_A, &ra) || !mma_split(c, b, at, TARGET_B, &rb) || !mma_split(c, cc, at, TARGET_C, &rc))
        return;
    if (d != cc && !dist_layout_equal(td->lay, tc->lay)) {
        cgc_fail(c, TSL_ERR_SHAPE, "mma: the destination's layout differs from C's");
        return;
    }
    int64_t na = target_atom_layout(at, TARGET_A)->locals, nb = target_atom_layout(at, TARGET_B)->locals,
            nc = target_atom_layout(at, TARGET_C)->locals;
    /* the row's fragment plan (target/frag.c, which the CUDA generator
     * prints too): per warp, C tile and k step, the A and B tile slots */
    target_mma_plan p;
    if (target_mma_plan_make(&p, at, ta_->lay, tb->lay, tc->lay, rc.threads * at->threads)) {
        if (p.missing)
            cgc_fail(c, TSL_ERR_SHAPE, "mma: warp %lld computes C tile (%lld,%lld) but does not hold %s tile (%lld,%lld)",
                     (long long)p.miss_warp, (long long)p.miss_c[0], (long long)p.miss_c[1], p.miss_a ? "A" : "B",
                     (long long)p.miss[0], (long long)p.miss[1]);
        else
            cgc_fail(c, TSL_ERR_SHAPE, "mma: the operands' layouts are not %s's fragments over the same warps",
                     at->name);
        return;
    }
    int64_t kt = p.ksteps, nct = p.warps * p.tiles;
    int64_t *ctile = malloc(sizeof(int64_t) * (size_t)(2 * nct + 2));
    int64_t *ab = malloc(sizeof(int64_t) * (size_t)(2 * nct * kt + 2));
    if (!ctile || !ab) {
        free(ctile);
        free(ab);
        target_mma_plan_free(&p);
        cgc_fail(c, TSL_ERR_NOMEM, "out of memory");
        return;
    }
    for (int64_t e = 0; e < nct; e++) {
        ctile[2 * e] = e / p.tiles, ctile[2 * e + 1] = e % p.tiles;
        for (int64_t k = 0; k < kt; k++) ab[2 * (e * kt + k)] = p.a[e * kt + k], ab[2 * (e * kt + k) + 1] = p.b[e * kt + k];
    }
    target_mma_plan_free(&p);
    const char *tcn = cgc_emit_i32_table(c, "mma: (warp, C tile slot) per C tile", ctile, 2 * nct);
    const char *tab = cgc_emit_i32_table(c, "mma: (A tile slot, B tile slot) per C tile and k step", ab, 2 * nct * kt);
    free(ctile);
    free(ab);
    const char *fa = frag_table(c, at, TARGET_A), *fb = frag_table(c, at, TARGET_B), *fc = frag_table(c, at, TARGET_C);
    cgc_need_scratch(c, (tc->ns + (qb ? tb->ns : 0)) * 4 + 64);
    cgc_line(c, "float *const res = (float *)scratch;");
    cgc_line(c, "memcpy(res, %s, %lld);", cgc_rname(c, cc), (long long)(tc->ns * 4));
    char bname[64];
    snprintf(bname, sizeof bname, "%s", cgc_rname(c, b));
    if (qb) { /* the codes as floats, after the C tiles in scratch */
        cgc_line(c, "float *const qbf = res + %lld;", (long long)tc->ns);
        cgc_line(c, "for (int64_t i = 0; i < %lld; i++) qbf[i] = (float)%s[i];", (long long)tb->ns, bname);
        snprintf(bname, sizeof bname, "qbf");
    }
    cgc_line(c, "for (int64_t e = 0; e < %lld; e++) {", (long long)nct);
    c->ind++;
    cgc_line(c, "const int64_t w = %s[2 * e], ct = %s[2 * e + 1];", tcn, tcn);
    cgc_line(c, "float fc[32 * %lld];", (long long)nc);
    cgc_line(c, "for (int l = 0; l < 32; l++)");
    cgc_line(c, "    for (int i = 0; i < %lld; i++) fc[l * %lld + i] = res[(w * 32 + l) * %lld + ct * %lld + i];",
      (long long)nc, (long long)nc, (long long)tc->nlocals, (long long)nc);
    cgc_line(c, "for (int64_t k = 0; k < %lld; k++)", (long long)kt);
    cgc_line(c, "    tsl_mma_frag(%s, %lld, %s[2 * (e * %lld + k)], %lld, %s, %s, %lld, %s[2 * (e * %lld + k) + 1], %lld, %s, "
                "%s, %lld, %d, w, fc, %d);",
      cgc_rname(c, a), (long long)ta_->nlocals, tab, (long long)kt, (long long)na, fa, bname,
      (long long)tb->nlocals, tab, (long long)kt, (long long)nb, fb, fc, (long long)nc, at->k,
      (at->tf32 ? 1 : 0) | (at->dtype[TARGET_D] == TSL_DTYPE_F16 ? 2 : 0));
    char fce[48];
    snprintf(fce, sizeof fce, "fc[l * %lld + i]", (long long)nc);
    cgc_line(c, "for (int l = 0; l < 32; l++)");
    cgc_line(c, "    for (int i = 0; i < %lld; i++) res[(w * 32 + l) * %lld + ct * %lld + i] = %s;", (long long)nc,
      (long long)tc->nlocals, (long long)nc, cgc_rnd(c, d->type.dt, fce));
    c->ind--;
    cgc_line(c, "}");
    cgc_line(c, "memcpy(%s, res, %lld);", cgc_rname(c, d), (long long)(tc->ns * 4));
}

void cgc_emit_print(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_operand *o = &in->args[0];
    if (!o->v) {
        cgc_line(c, "printf(\"block (%%lld,%%lld,%%lld): %%g\\n\", (long long)bx, (long long)by, (long long)bz, %s);",
          cgc_cnum(c, o->scalar));
        return;
    }
    if (o->v->kind == TILE_V_SCALAR) {
        cgc_line(c, "printf(\"block (%%lld,%%lld,%%lld): %s = %%lld\\n\", (long long)bx, (long long)by, (long long)bz, "
             "(long long)v%d);", o->v->name, o->v->id);
        return;
    }
    const tile_value *x = cgc_reg_arg(c, o);
    if (!x) return;
    const cgc_tab *tb = &c->tabv[cgc_rt(c, x)];
    const char *tc = cgc_tab_coord(c, cgc_rt(c, x));
    cgc_line(c, "printf(\"block (%%lld,%%lld,%%lld): %s (thread, local) -> [coord] value\\n\", (long long)bx, "
         "(long long)by, (long long)bz);", x->name);
    cgc_line(c, "for (int64_t i = 0; i < %lld; i++) {", (long long)tb->ns);
    c->ind++;
    cgc_line(c, "if (%s[i][0] < 0) continue;", tc);
    strbuf fmt = {0}, args = {0};
    for (int i = 0; i < tb->rank; i++) {
        sb_printf(&fmt, "%s%%d", i ? "," : "");
        sb_printf(&args, ", %s[i][%d]", tc, i);
    }
    cgc_line(c, "printf(\"  (%%lld,%%lld) -> [%s] %%g\\n\", (long long)(i / %lld), (long long)(i %% %lld)%s, (double)%s[i]);",
      sb_str(&fmt), (long long)tb->nlocals, (long long)tb->nlocals, sb_str(&args), cgc_rname(c, x));
    sb_free(&fmt);
    sb_free(&args);
    c->ind--;
    cgc_line(c, "}");
}

void cgc_emit_nothing(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    /* wait's count is evaluated as the interpreter does (errors show) */
    if (in->op == TILE_I_WAIT && in->nargs && in->args[0].scalar) cgc_line(c, "(void)%s;", cgc_cx(c, in->args[0].scalar));
    cgc_line(c, "/* no-op on the CPU: the block's threads run in program order */");
}
