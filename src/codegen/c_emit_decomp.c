/* c_emit_decomp.c — the C generator for decompositions, through the one
 * decomposition walk (tile/decomp.c) the interpreter also runs: the body
 * runs once per thread (thread_idx, `indices` tables), collective atoms
 * (ldmatrix.x1/x2/x4[.trans]) are recorded per thread and run warp by
 * warp after the loop with their target row's lane map, other moves run
 * per thread element by element (interp_spec.c is the oracle). */
#include <math.h>
#include <string.h>

#include "codegen/c_int.h"
#include "tile/decomp.h"

typedef struct cgc_atom {
    const tile_stmt *s;
    const target_atom *row;
    int id;
    int64_t dslot[8]; /* destination slot of each received element (2 x count) */
    cgc_view view;
    const tile_value *dst;
} cgc_atom;

typedef struct cgc_decomp {
    cgc *c;
    tile_decomp_visitor vis;
    cgc_atom atoms[16];
    int n;
    const char *saved[256]; /* c->text around each statement, by depth */
    int depth;
} cgc_decomp;

const char *cgc_next_line(cgc *c);

static int64_t indices_row(const tile_threads *g, int64_t th, int no, int64_t *row, char *err, size_t nerr)
{
    return tile_decomp_indices(g, th, no + 1, row, err, nerr);
}

/* `let a, b, i = indices g` (tile_decomp_indices) as a table per thread. */
void cgc_emit_indices(cgc *c, const tile_stmt *s)
{
    if (!c->in_decomp) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "indices: only inside a decomposition");
        return;
    }
    const tile_threads *g = &s->group->threads;
    int nt = c->k->threads, no = g->nouter ? g->nouter : 1;
    if (s->nvs != 1 && s->nvs != no + 1) {
        cgc_fail(c, TSL_ERR_SHAPE, "indices of '%s': indices give %d values, %d names", s->group->name, no + 1, s->nvs);
        return;
    }
    int64_t *tab = calloc((size_t)nt * (size_t)(no + 1) + 1, sizeof *tab);
    if (!tab) {
        cgc_fail(c, TSL_ERR_NOMEM, "out of memory");
        return;
    }
    char err[256];
    for (int th = 0; th < nt && !c->st; th++)
        if (indices_row(g, th, no, &tab[th * (no + 1)], err, sizeof err))
            cgc_fail(c, TSL_ERR_SEMANTIC, "indices of '%s': %s", s->group->name, err);
    if (c->st) {
        free(tab);
        return;
    }
    const char *tn = cgc_emit_i32_table(c, arena_printf(c->ar, "indices %s: (outer..., index) per thread", s->group->name),
                                    tab, (int64_t)nt * (no + 1));
    free(tab);
    if (s->nvs == 1) {
        cgc_line(c, "v%d = %s[tid * %d + %d];", s->vs[0]->id, tn, no + 1, no);
        return;
    }
    for (int i = 0; i <= no; i++) cgc_line(c, "v%d = %s[tid * %d + %d];", s->vs[i]->id, tn, no + 1, i);
}

/* C expression of the slot of local view coordinates cs (bounds-checked:
 * emits the check, returning a run-time error). */
static char *local_elem(cgc *c, const cgc_view *vw, char **cs)
{
    strbuf cond = {0}, slot = {0};
    for (int i = 0; i < vw->rank; i++) {
        sb_printf(&cond, "%s(uint64_t)%s >= %lldu", i ? " || " : "", cs[i], (long long)vw->dims[i]);
        int64_t rest = 1;
        for (int j = i + 1; j < vw->rank; j++) rest *= vw->dims[j];
        sb_printf(&slot, "%s%s * %lld", i ? " + " : "", cs[i], (long long)rest);
    }
    int id = cgc_rterr(c, TSL_ERR_BOUNDS, "outside %s.local", vw->v->name);
    cgc_line(c, "if (%s) return %d;", sb_str(&cond), id);
    char *r = arena_printf(c->ar, "%s[tid * %lld + %s]", cgc_rname(c, vw->v), (long long)c->tabv[cgc_rt(c, vw->v)].nlocals,
                           sb_str(&slot));
    sb_free(&cond);
    sb_free(&slot);
    return r;
}

/* ---- the walk's callbacks ------------------------------------------------------------------ */

static void dc_enter(void *ctx, const tile_stmt *s)
{
    cgc_decomp *dc = ctx;
    cgc *c = dc->c;
    (void)s;
    if (dc->depth < (int)TSL_COUNTOF(dc->saved)) dc->saved[dc->depth] = c->text;
    dc->depth++;
    c->text = cgc_next_line(c);
    cgc_line(c, "/* %s */", c->text);
}

static void dc_leave(void *ctx, const tile_stmt *s)
{
    cgc_decomp *dc = ctx;
    (void)s;
    cgc_div_check(dc->c);
    dc->depth--;
    if (dc->depth < (int)TSL_COUNTOF(dc->saved)) dc->c->text = dc->saved[dc->depth];
}

static tsl_status dc_status(cgc *c)
{
    return c->st ? c->st : TSL_OK;
}

static tsl_status dc_scalar(void *ctx, const tile_stmt *s)
{
    cgc *c = ((cgc_decomp *)ctx)->c;
    cgc_line(c, "v%d = %s;", s->v->id, cgc_cx(c, s->e));
    return dc_status(c);
}

static tsl_status dc_indices(void *ctx, const tile_stmt *s)
{
    cgc *c = ((cgc_decomp *)ctx)->c;
    cgc_emit_indices(c, s);
    return dc_status(c);
}

static tsl_status dc_branch(void *ctx, const tile_stmt *s)
{
    cgc_decomp *dc = ctx;
    cgc *c = dc->c;
    cgc_line(c, "if (%s) {", cgc_cx(c, s->e));
    c->ind++;
    tsl_status st = tile_decomp_walk(s->body, &dc->vis);
    c->ind--;
    if (!st && s->els) {
        cgc_line(c, "} else {");
        c->ind++;
        st = tile_decomp_walk(s->els, &dc->vis);
        c->ind--;
    }
    cgc_line(c, "}");
    return st ? st : dc_status(c);
}

static tsl_status dc_loop(void *ctx, const tile_stmt *s)
{
    cgc_decomp *dc = ctx;
    cgc *c = dc->c;
    int v = s->v->id;
    const char *step = s->step ? cgc_cx(c, s->step) : "1";
    int id = cgc_rterr(c, TSL_ERR_RUNTIME, "for: the step is not positive");
    cgc_line(c, "{");
    c->ind++;
    cgc_line(c, "const int64_t lo = %s, hi = %s, step = %s;", cgc_cx(c, s->lo), cgc_cx(c, s->hi), step);
    cgc_line(c, "if (step <= 0) return %d;", id);
    cgc_line(c, "for (v%d = lo; v%d < hi; v%d += step) {", v, v, v);
    c->ind++;
    tsl_status st = tile_decomp_walk(s->body, &dc->vis);
    c->ind--;
    cgc_line(c, "}");
    c->ind--;
    cgc_line(c, "}");
    return st ? st : dc_status(c);
}

static tsl_status dc_fail(void *ctx, size_t pos, tsl_status st, const char *msg)
{
    cgc *c = ((cgc_decomp *)ctx)->c;
    (void)pos;
    cgc_fail(c, st, "%s", msg);
    return c->st;
}

/* Record one thread's part of a collective atom (ldmatrix): its row of 8
 * (rank-2 shared view [1, 8]); the destination `R.local[.tile(..)]` gives
 * the 2 x count slots (tile_decomp_collective_dst). */
static tsl_status dc_collective(void *ctx, const tile_stmt *s, const target_atom *row)
{
    cgc_decomp *dc = ctx;
    cgc *c = dc->c;
    const tile_instr *in = &s->instr;
    cgc_atom *a = NULL;
    char err[256];
    for (int i = 0; i < dc->n; i++)
        if (dc->atoms[i].s == s) a = &dc->atoms[i];
    if (!a) {
        if (dc->n == (int)TSL_COUNTOF(dc->atoms)) {
            cgc_fail(c, TSL_ERR_UNAVAILABLE, "too many atoms in one decomposition");
            return c->st;
        }
        a = &dc->atoms[dc->n];
        a->s = s;
        a->id = dc->n++;
    }
    a->row = row;
    const tile_operand *dop = in->has_dst ? &in->dst : NULL;
    if (tile_decomp_collective_dst(dop, row, a->dslot, err, sizeof err)) {
        cgc_fail(c, TSL_ERR_SHAPE, "%s", err);
        return c->st;
    }
    a->dst = dop->v;
    if (cgc_rt(c, a->dst) < 0) {
        cgc_fail(c, TSL_ERR_SHAPE, "%s: '%s' is not a register tensor here", row->name, a->dst->name);
        return c->st;
    }
    if (!cgc_view_of(c, &in->args[0], &a->view)) return c->st;
    const cgc_view *vw = &a->view;
    if (vw->local || tile_decomp_collective_src(row, vw->v->type.space, vw->v->type.dt.bits, vw->rank, vw->ext, err,
                                                sizeof err)) {
        cgc_fail(c, TSL_ERR_SHAPE, "%s", vw->local ? "ldmatrix reads a shared tile" : err);
        return c->st;
    }
    cgc_line(c, "for (int64_t j = 0; j < 8; j++) {");
    cgc_line(c, "    rec%d[tid * 16 + 2 * j] = %s;", a->id, cgc_view_map(c, vw, 0, "(int64_t)0"));
    cgc_line(c, "    rec%d[tid * 16 + 2 * j + 1] = %s;", a->id, cgc_view_map(c, vw, 1, "j"));
    cgc_line(c, "}");
    cgc_line(c, "rec%d_ok = 1;", a->id);
    return dc_status(c);
}

/* A move inside a decomposition that is not a collective atom: this
 * thread's elements one by one, the k-th of the source box (row-major)
 * to the k-th of the destination box, through double (interp dc_move). */
static tsl_status dc_move(void *ctx, const tile_stmt *s, const target_atom *row)
{
    cgc *c = ((cgc_decomp *)ctx)->c;
    const tile_instr *in = &s->instr;
    (void)row;
    if (!in->has_dst || in->nargs < 1 || !in->args[0].v) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "inside a decomposition only moves 'op SRC -> DST' (and ldmatrix) run");
        return c->st;
    }
    cgc_view a, b;
    if (!cgc_view_of(c, &in->args[0], &a) || !cgc_view_of(c, &in->dst, &b)) return c->st;
    int64_t na, nb, ea[CGC_MAX_RANK], eb[CGC_MAX_RANK];
    if (tile_decomp_move_box(a.rank, a.ext, b.rank, b.ext, ea, eb, &na, &nb) < 0) {
        cgc_fail(c, TSL_ERR_SHAPE, "this thread moves %lld elements of '%s' into %lld of '%s'", (long long)na,
                a.v->name, (long long)nb, b.v->name);
        return c->st;
    }
    const cgc_view *vs[2] = {&a, &b};
    const int64_t *es[2] = {ea, eb};
    for (int side = 0; side < 2; side++)
        if (vs[side]->local && c->tabv[cgc_rt(c, vs[side]->v)].nthreads < c->k->threads) {
            int id = cgc_rterr(c, TSL_ERR_BOUNDS, "outside %s.local", vs[side]->v->name);
            cgc_line(c, "if (tid >= %lld) return %d;", (long long)c->tabv[cgc_rt(c, vs[side]->v)].nthreads, id);
        }
    cgc_line(c, "for (int64_t k = 0; k < %lld; k++) {", (long long)na);
    c->ind++;
    cgc_line(c, "double v;");
    for (int side = 0; side < 2; side++) {
        const cgc_view *vw = vs[side];
        char **cs = arena_alloc(c->ar, sizeof(char *) * CGC_MAX_RANK);
        int64_t div = 1;
        for (int i = vw->rank - 1; i >= 0; i--) {
            cs[i] = arena_printf(c->ar, "%c%d", side ? 'b' : 'a', i);
            char *vc = arena_printf(c->ar, "(k / %lld %% %lld)", (long long)div, (long long)es[side][i]);
            cgc_line(c, "const int64_t %s = %s;", cs[i], cgc_view_map(c, vw, i, vc));
            div *= es[side][i];
        }
        tile_dtype dt = vw->v->type.dt;
        if (vw->local) {
            char *e = local_elem(c, vw, cs);
            if (!side) cgc_line(c, "v = (double)%s;", e);
            else cgc_line(c, "%s = %s;", e, cgc_rnd(c, dt, "v"));
        } else if (vw->v->type.space == TILE_SHARED) {
            char *e = cgc_shared_elem(c, vw, cs, side);
            if (!side) cgc_line(c, "v = %s;", cgc_mem_to_dbl(c, dt, e));
            else cgc_line(c, "%s = %s;", e, cgc_dbl_to_mem(c, dt, "v"));
        } else if (vw->v->type.space == TILE_GLOBAL) {
            if (!side)
                cgc_line(c, "v = (%s) ? %s : 0.0;", cgc_global_inb(c, vw, cs), cgc_mem_to_dbl(c, dt, cgc_global_elem(c, vw, cs)));
            else
                cgc_line(c, "if (%s) %s = %s;", cgc_global_inb(c, vw, cs), cgc_global_elem(c, vw, cs), cgc_dbl_to_mem(c, dt, "v"));
        } else {
            cgc_fail(c, TSL_ERR_SEMANTIC, "a register tensor inside a decomposition is used as '%s.local'",
                    vw->v->name);
        }
    }
    c->ind--;
    cgc_line(c, "}");
    return dc_status(c);
}

/* A recorded ldmatrix, warp by warp: lanes below 8 x count give rows;
 * lane l receives element e of register m at the (row, col) of matrix m
 * that its target row's fragment layout gives (target_frag_coord). */
static void run_collective(cgc *c, const cgc_atom *a, int nt)
{
    const cgc_tab *td = &c->tabv[cgc_rt(c, a->dst)];
    int n = a->row->count;
    int64_t lm[32 * 2 * 2];
    for (int l = 0; l < 32; l++)
        for (int e = 0; e < 2; e++) target_frag_coord(a->row, TARGET_D, l, e, &lm[4 * l + 2 * e], &lm[4 * l + 2 * e + 1]);
    cgc_line(c, "/* %s, warp by warp: lane l receives (row, col) of matrix m */", a->row->name);
    cgc_line(c, "if (rec%d_ok)", a->id);
    cgc_line(c, "for (int64_t w = 0; w < %d && w * 32 < %lld; w++) {", nt / 32, (long long)td->nthreads);
    c->ind++;
    cgc_line(c, "double rows[32][8];");
    cgc_line(c, "for (int64_t l = 0; l < %d; l++)", 8 * n);
    cgc_line(c, "for (int64_t j = 0; j < 8; j++) {");
    c->ind++;
    cgc_line(c, "const int64_t ca = rec%d[(w * 32 + l) * 16 + 2 * j], cb = rec%d[(w * 32 + l) * 16 + 2 * j + 1];",
      a->id, a->id);
    char *cs[2] = {"ca", "cb"};
    char *e = cgc_shared_elem(c, &a->view, cs, 0);
    cgc_line(c, "rows[l][j] = %s;", cgc_mem_to_dbl(c, a->view.v->type.dt, e));
    c->ind--;
    cgc_line(c, "}");
    const char *ds = cgc_emit_i32_table(c, "ldmatrix: destination slot of received element 2m+e", a->dslot, 2 * n);
    const char *lt = cgc_emit_i32_table(c, arena_printf(c->ar, "%s: (row, col) in its matrix of element e of lane l", a->row->name),
                                        lm, 32 * 2 * 2);
    cgc_line(c, "for (int l = 0; l < 32; l++)");
    cgc_line(c, "    for (int m = 0; m < %d; m++)", n);
    cgc_line(c, "        for (int e = 0; e < 2; e++)");
    cgc_line(c, "            %s[(w * 32 + l) * %lld + %s[2 * m + e]] = %s;", cgc_rname(c, a->dst), (long long)td->nlocals,
      ds, cgc_rnd(c, a->dst->type.dt, arena_printf(c->ar, "rows[8 * m + %s[4 * l + 2 * e]][%s[4 * l + 2 * e + 1]]", lt, lt)));
    c->ind--;
    cgc_line(c, "}");
}

void cgc_emit_decomp(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *r = in->result;
    int nt = c->k->threads;
    if (r && r->type.space == TILE_REGISTER)
        cgc_line(c, "for (int64_t i = 0; i < %lld; i++) %s[i] = %s;", (long long)c->tabv[cgc_rt(c, r)].ns, cgc_rname(c, r),
          cgc_pad_value(r->type.dt));
    /* the per-thread body goes into its own buffer: the record arrays it
     * uses are declared before it once the atoms are known */
    strbuf outer = c->body;
    memset(&c->body, 0, sizeof c->body);
    int ind = c->ind;
    c->ind = 1;
    cgc_decomp *dc = calloc(1, sizeof *dc);
    if (!dc) {
        c->body = outer;
        c->ind = ind;
        cgc_fail(c, TSL_ERR_NOMEM, "out of memory");
        return;
    }
    dc->c = c;
    dc->vis = (tile_decomp_visitor){.ctx = dc, .enter = dc_enter, .leave = dc_leave, .scalar = dc_scalar,
                                    .indices = dc_indices, .branch = dc_branch, .loop = dc_loop,
                                    .collective = dc_collective, .move = dc_move, .fail = dc_fail};
    c->in_decomp++;
    tile_decomp_walk(in->decomp, &dc->vis);
    c->in_decomp--;
    strbuf inner = c->body;
    c->body = outer;
    c->ind = ind;
    if (c->st) {
        sb_free(&inner);
        free(dc);
        return;
    }
    cgc_need_scratch(c, (int64_t)dc->n * nt * 16 * 8 + 64);
    for (int i = 0; i < dc->n; i++) {
        cgc_line(c, "int64_t *const rec%d = (int64_t *)scratch + %lld;", i, (long long)i * nt * 16);
        cgc_line(c, "int rec%d_ok = 0;", i);
        cgc_line(c, "memset(rec%d, 0, %lld);", i, (long long)nt * 16 * 8);
    }
    cgc_line(c, "for (int64_t tid = 0; tid < %d; tid++) {", nt);
    const char *p = sb_str(&inner);
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        for (int i = 0; i < c->ind; i++) sb_puts(&c->body, "    ");
        sb_putn(&c->body, p, n);
        sb_putc(&c->body, '\n');
        p += n + (e ? 1 : 0);
    }
    sb_free(&inner);
    cgc_line(c, "}");
    if (dc->n && nt % 32) cgc_fail(c, TSL_ERR_SHAPE, "ldmatrix needs whole warps; the block has %d threads", nt);
    for (int i = 0; i < dc->n && !c->st; i++) run_collective(c, &dc->atoms[i], nt);
    free(dc);
}
