/* c_emit_decomp.c — the C generator for decompositions: the body runs
 * once per thread (thread_idx, `indices` tables), ldmatrix.x4 atoms are
 * recorded per thread and run warp by warp after the loop, other moves
 * run per thread element by element (interp_spec.c). */
#include <math.h>
#include <string.h>

#include "codegen/c_int.h"

/* ---- decompositions -------------------------------------------------------------------------
 * The body runs once per thread (thread_idx = tid, `indices` from a
 * table); each ldmatrix.x4 atom records that thread's 8 source
 * coordinates; then the atoms run warp by warp (interp exec_decomp). */

typedef struct cgc_atom {
    const tile_stmt *s;
    int id;
    int64_t dslot[8]; /* destination slot of each of the 8 received elements */
    cgc_view view;
    const tile_value *dst;
} cgc_atom;

typedef struct cgc_decomp {
    cgc_atom atoms[16];
    int n;
} cgc_decomp;

void cgc_emit_stmts(cgc *c, const tile_block *b);
static void emit_decomp_block(cgc *c, cgc_decomp *dc, const tile_block *b);
const char *cgc_next_line(cgc *c);

/* `let a, b, i = indices g` (interp exec_indices) as a table per thread. */
void cgc_emit_indices(cgc *c, const tile_stmt *s)
{
    if (!c->in_decomp) {
        cgc_fail(c, TSL_ERR_SEMANTIC, "indices: only inside a decomposition");
        return;
    }
    const tile_threads *g = &s->group->threads;
    int nt = c->k->threads, no = g->nouter ? g->nouter : 1;
    if (s->nvs != 1 && s->nvs != no + 1) {
        cgc_fail(c, TSL_ERR_SHAPE, "indices of '%s' give %d values, %d names", s->group->name, no + 1, s->nvs);
        return;
    }
    int64_t *tab = calloc((size_t)nt * (size_t)(no + 1) + 1, sizeof *tab);
    if (!tab) {
        cgc_fail(c, TSL_ERR_NOMEM, "out of memory");
        return;
    }
    layout comp;
    int tiled = g->tiler && g->tiler->v.kind == LAYOUT_VALUE_DATA;
    int64_t inner = g->inner > 0 ? g->inner : 1;
    if (tiled) {
        layout_err le = {{0}, 0};
        if (layout_complement(&comp, &g->tiler->v.data, g->total, &le)) {
            cgc_fail(c, TSL_ERR_SEMANTIC, "thread tile: %s", le.msg);
            free(tab);
            return;
        }
    }
    for (int th = 0; th < nt && !c->st; th++) {
        int64_t t = th % (g->total > 0 ? g->total : 1), grp = 0, idx = 0;
        if (tiled) {
            int found = 0;
            for (int64_t j = 0; j < g->total / inner && !found; j++)
                for (int64_t i = 0; i < inner && !found; i++)
                    if (layout_eval(&comp, j) + layout_eval(&g->tiler->v.data, i) == t) {
                        grp = j;
                        idx = i;
                        found = 1;
                    }
            if (!found) cgc_fail(c, TSL_ERR_SEMANTIC, "thread %lld is in no group", (long long)t);
        } else {
            grp = t / inner;
            idx = t % inner;
        }
        int64_t *row = &tab[th * (no + 1)];
        if (!g->nouter) {
            row[0] = grp;
        } else {
            int64_t r = grp;
            for (int i = no - 1; i >= 0; i--) {
                row[i] = r % g->outer[i];
                r /= g->outer[i];
            }
        }
        row[no] = idx;
    }
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

/* Slot of local coordinate lc (row-major over the local shape), -1 outside. */
static int64_t local_slot(const dist_layout *l, const int64_t *lc)
{
    int64_t ld[DIST_MAX_RANK], slot = 0;
    cgc_local_shape(l, ld);
    for (int i = 0; i < l->rank; i++) {
        if (lc[i] < 0 || lc[i] >= ld[i]) return -1;
        slot = slot * ld[i] + lc[i];
    }
    return slot;
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

/* Slot of element i (register i/2, half i%2) of an ldmatrix destination
 * `R.local` or `R.local.tile([a, b])` (interp ldmatrix_slot); -1 when it
 * does not fit. The same for every thread. */
static int64_t ldmatrix_slot(const dist_layout *l, const tile_operand *dop, int i)
{
    int64_t ld[DIST_MAX_RANK], lc[DIST_MAX_RANK], sz[DIST_MAX_RANK], outer[DIST_MAX_RANK];
    int r = l->rank;
    cgc_local_shape(l, ld);
    int64_t m = i / 2, e = i % 2;
    if (dop->nsteps == 1) {
        int64_t x = i;
        for (int k = r - 1; k >= 0; k--) {
            lc[k] = x % ld[k];
            x /= ld[k];
        }
        return x ? -1 : local_slot(l, lc);
    }
    const tile_step *st = &dop->steps[1];
    for (int k = 0; k < r; k++) {
        int j = k - (r - st->n);
        sz[k] = j >= 0 ? st->sizes[j] : 1;
        if (sz[k] < 1 || ld[k] % sz[k]) return -1;
        outer[k] = ld[k] / sz[k];
    }
    for (int k = r - 1; k >= 0; k--) {
        lc[k] = (m % outer[k]) * sz[k] + e % sz[k];
        m /= outer[k];
        e /= sz[k];
    }
    return m || e ? -1 : local_slot(l, lc);
}

/* Record one thread's part of an ldmatrix.x4: its row of 8 (rank-2 shared
 * view [1, 8]); the destination `R.local[.tile(..)]` gives the 8 slots. */
static void record_ldmatrix(cgc *c, cgc_decomp *dc, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    cgc_atom *a = NULL;
    if (strncmp(in->atom, "ldmatrix.x4", 11)) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "atom %s: the C generator knows ldmatrix.x4[.trans]", in->atom);
        return;
    }
    for (int i = 0; i < dc->n; i++)
        if (dc->atoms[i].s == s) a = &dc->atoms[i];
    if (!a) {
        if (dc->n == 16) {
            cgc_fail(c, TSL_ERR_UNAVAILABLE, "too many atoms in one decomposition");
            return;
        }
        a = &dc->atoms[dc->n];
        a->s = s;
        a->id = dc->n++;
    }
    const tile_operand *dop = in->has_dst ? &in->dst : NULL;
    if (!dop || !dop->v || dop->nsteps < 1 || dop->nsteps > 2 || dop->steps[0].kind != TILE_STEP_LOCAL ||
        (dop->nsteps == 2 && dop->steps[1].kind != TILE_STEP_TILE)) {
        cgc_fail(c, TSL_ERR_SEMANTIC,
                "ldmatrix atom: write '-> R.local' or '-> R.local.tile([..])' (the thread's registers)");
        return;
    }
    const tile_value *d = dop->v;
    if (d->type.space != TILE_REGISTER || cgc_rt(c, d) < 0 || c->tabv[cgc_rt(c, d)].nlocals != 8 ||
        d->type.dt.bits != 16) {
        cgc_fail(c, TSL_ERR_SHAPE, "ldmatrix.x4: '%s' must be a 16-bit register tensor with 8 slots per thread",
                d->name);
        return;
    }
    a->dst = d;
    for (int i = 0; i < 8; i++) {
        a->dslot[i] = ldmatrix_slot(c->tabv[cgc_rt(c, d)].lay, dop, i);
        if (a->dslot[i] < 0 || a->dslot[i] >= 8) {
            cgc_fail(c, TSL_ERR_SHAPE, "ldmatrix.x4: register %d of the destination is not in '%s.local'", i / 2,
                    d->name);
            return;
        }
    }
    if (!cgc_view_of(c, &in->args[0], &a->view)) return;
    const cgc_view *vw = &a->view;
    if (vw->local || vw->v->type.space != TILE_SHARED || vw->rank != 2 || vw->v->type.dt.bits != 16) {
        cgc_fail(c, TSL_ERR_SHAPE, "ldmatrix.x4 reads a 16-bit rank-2 shared tile");
        return;
    }
    if (vw->ext[0] > 1 || (vw->ext[1] >= 0 && vw->ext[1] != 8)) {
        cgc_fail(c, TSL_ERR_SHAPE, "ldmatrix.x4: each thread supplies one row of 8 elements");
        return;
    }
    cgc_line(c, "for (int64_t j = 0; j < 8; j++) {");
    cgc_line(c, "    rec%d[tid * 16 + 2 * j] = %s;", a->id, cgc_view_map(c, vw, 0, "(int64_t)0"));
    cgc_line(c, "    rec%d[tid * 16 + 2 * j + 1] = %s;", a->id, cgc_view_map(c, vw, 1, "j"));
    cgc_line(c, "}");
    cgc_line(c, "rec%d_ok = 1;", a->id);
}

/* A move inside a decomposition that is not a collective atom: this
 * thread's elements one by one, the k-th of the source box (row-major)
 * to the k-th of the destination box, through double (interp
 * exec_thread_move). */
static void emit_thread_move(cgc *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (!in->has_dst || in->nargs < 1 || !in->args[0].v) {
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "inside a decomposition only moves 'op SRC -> DST' (and ldmatrix) run");
        return;
    }
    cgc_view a, b;
    if (!cgc_view_of(c, &in->args[0], &a) || !cgc_view_of(c, &in->dst, &b)) return;
    int64_t na = 1, nb = 1, ea[CGC_MAX_RANK], eb[CGC_MAX_RANK];
    for (int i = 0; i < a.rank; i++) {
        int j = i - (a.rank - b.rank);
        ea[i] = a.ext[i] >= 0 ? a.ext[i] : j >= 0 && b.ext[j] >= 0 ? b.ext[j] : 1;
        na *= ea[i];
    }
    for (int i = 0; i < b.rank; i++) {
        int j = i - (b.rank - a.rank);
        eb[i] = b.ext[i] >= 0 ? b.ext[i] : j >= 0 ? ea[j] : 1;
        nb *= eb[i];
    }
    if (na != nb) {
        cgc_fail(c, TSL_ERR_SHAPE, "this thread moves %lld elements of '%s' into %lld of '%s'", (long long)na,
                a.v->name, (long long)nb, b.v->name);
        return;
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
}

static void emit_decomp_stmt(cgc *c, cgc_decomp *dc, const tile_stmt *s)
{
    const char *saved = c->text;
    c->text = cgc_next_line(c);
    cgc_line(c, "/* %s */", c->text);
    switch (s->kind) {
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET: cgc_line(c, "v%d = %s;", s->v->id, cgc_cx(c, s->e)); break;
    case TILE_S_THREADS: break;
    case TILE_S_INDICES: cgc_emit_indices(c, s); break;
    case TILE_S_IF:
        cgc_line(c, "if (%s) {", cgc_cx(c, s->e));
        c->ind++;
        emit_decomp_block(c, dc, s->body);
        c->ind--;
        if (s->els) {
            cgc_line(c, "} else {");
            c->ind++;
            emit_decomp_block(c, dc, s->els);
            c->ind--;
        }
        cgc_line(c, "}");
        break;
    case TILE_S_INSTR: {
        const tile_instr *in = &s->instr;
        if (in->decomp) emit_decomp_block(c, dc, in->decomp);
        else if (in->op == TILE_I_LOAD_SHARED && in->atom && !strncmp(in->atom, "ldmatrix", 8))
            record_ldmatrix(c, dc, s);
        else if (in->op == TILE_I_LOAD_GLOBAL || in->op == TILE_I_STORE_GLOBAL || in->op == TILE_I_LOAD_SHARED ||
                 in->op == TILE_I_STORE_SHARED || in->op == TILE_I_COPY_ASYNC || in->op == TILE_I_COPY)
            emit_thread_move(c, s);
        else if (in->op == TILE_I_COMMIT || in->op == TILE_I_WAIT || in->op == TILE_I_SYNC)
            cgc_fail(c, TSL_ERR_UNAVAILABLE, "%s inside a decomposition: put it outside", tile_op_info_of(in->op)->name);
        else
            cgc_fail(c, TSL_ERR_UNAVAILABLE, "%s%s%s: not an atom the C generator knows inside a decomposition",
                    tile_op_info_of(in->op)->name, in->atom ? " atom " : "", in->atom ? in->atom : "");
        break;
    }
    default:
        cgc_fail(c, TSL_ERR_UNAVAILABLE, "only let/indices/if and atoms run inside a decomposition");
    }
    cgc_div_check(c);
    c->text = saved;
}

static void emit_decomp_block(cgc *c, cgc_decomp *dc, const tile_block *b)
{
    for (int i = 0; i < b->n && !c->st; i++) emit_decomp_stmt(c, dc, b->items[i]);
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
    cgc_decomp dc;
    memset(&dc, 0, sizeof dc);
    c->in_decomp++;
    emit_decomp_block(c, &dc, in->decomp);
    c->in_decomp--;
    strbuf inner = c->body;
    c->body = outer;
    c->ind = ind;
    if (c->st) {
        sb_free(&inner);
        return;
    }
    cgc_need_scratch(c, (int64_t)dc.n * nt * 16 * 8 + 64);
    for (int i = 0; i < dc.n; i++) {
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
    for (int i = 0; i < dc.n && !c->st; i++) {
        cgc_atom *a = &dc.atoms[i];
        const cgc_tab *td = &c->tabv[cgc_rt(c, a->dst)];
        int trans = strstr(a->s->instr.atom, "trans") != NULL;
        if (nt % 32) {
            cgc_fail(c, TSL_ERR_SHAPE, "ldmatrix needs whole warps; the block has %d threads", nt);
            return;
        }
        cgc_line(c, "/* ldmatrix.x4%s, warp by warp: lane l receives (row, col) of matrix m */", trans ? ".trans" : "");
        cgc_line(c, "if (rec%d_ok)", i);
        cgc_line(c, "for (int64_t w = 0; w < %d && w * 32 < %lld; w++) {", nt / 32, (long long)td->nthreads);
        c->ind++;
        cgc_line(c, "double rows[32][8];");
        cgc_line(c, "for (int64_t l = 0; l < 32; l++)");
        cgc_line(c, "for (int64_t j = 0; j < 8; j++) {");
        c->ind++;
        cgc_line(c, "const int64_t ca = rec%d[(w * 32 + l) * 16 + 2 * j], cb = rec%d[(w * 32 + l) * 16 + 2 * j + 1];",
          i, i);
        char *cs[2] = {"ca", "cb"};
        char *e = cgc_shared_elem(c, &a->view, cs, 0);
        cgc_line(c, "rows[l][j] = %s;", cgc_mem_to_dbl(c, a->view.v->type.dt, e));
        c->ind--;
        cgc_line(c, "}");
        const char *ds = cgc_emit_i32_table(c, "ldmatrix: destination slot of received element 2m+e", a->dslot, 8);
        cgc_line(c, "for (int l = 0; l < 32; l++)");
        cgc_line(c, "    for (int m = 0; m < 4; m++)");
        cgc_line(c, "        for (int e = 0; e < 2; e++)");
        cgc_line(c, "            %s[(w * 32 + l) * 8 + %s[2 * m + e]] = %s;", cgc_rname(c, a->dst), ds,
          cgc_rnd(c, a->dst->type.dt,
              trans ? "rows[8 * m + 2 * (l % 4) + e][l / 4]" : "rows[8 * m + l / 4][2 * (l % 4) + e]"));
        c->ind--;
        cgc_line(c, "}");
    }
}
