/* cuda_decomp.c — the CUDA generator for decompositions (Graphene's specs,
 * docs/tile-ir.md §4), through the one decomposition walk (tile/decomp.c)
 * the interpreter and the C generator also run: on the GPU the body is
 * what each thread runs, so it prints as straight-line per-thread code —
 * `let`/`var`/`set` as integers, `indices` from a table of every thread's
 * values, `if`/`for` as C, a move element by element (the k-th of the
 * source box to the k-th of the destination box, as interp_spec.c), and a
 * collective atom (ldmatrix) as its table row's instruction: each lane
 * gives the address of its row, the received registers go to the
 * destination slots tile_decomp_collective_dst names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_int.h"
#include "tile/decomp.h"

enum { DV_CHAIN = 8 };

/* An operand T[...].tile([..])[...] (or R.local...) as, per dimension, a
 * chain of steps: coord = off0 + T0(off1 + T1(... x)) (cgc_view_of). */
typedef struct dview {
    const tile_value *v;
    int rank;
    int nchain[CG_MAX_RANK];
    const layout *tiler[CG_MAX_RANK][DV_CHAIN];
    char off[CG_MAX_RANK][DV_CHAIN][160];
    int64_t ext[CG_MAX_RANK];  /* extent; -1: the other operand's */
    int64_t dims[CG_MAX_RANK]; /* shared / register: constant dims; .local: the local shape */
    int local;
} dview;

typedef struct cdecomp {
    cg *c;
    tile_decomp_visitor vis;
} cdecomp;

/* ---- layouts and views as C --------------------------------------------------------------- */

/* Offset of 1-D index x in the subtree at `root` (layout.c eval_sub):
 * leaves colexicographic, the last takes the whole quotient. */
static void lay_sub(strbuf *sb, const layout *l, int root, const char *x)
{
    int end = root + l->node[root].nnodes, last = -1, terms = 0;
    for (int i = root; i < end; i++)
        if (!l->node[i].nkids) last = i;
    int64_t div = 1;
    sb_putc(sb, '(');
    for (int i = root; i < end; i++) {
        const layout_node *nd = &l->node[i];
        if (nd->nkids) continue;
        if (nd->stride != 0) {
            sb_puts(sb, terms++ ? " + " : "");
            if (i == last) sb_printf(sb, "(%s) / %lld * %lld", x, (long long)div, (long long)nd->stride);
            else
                sb_printf(sb, "(%s) / %lld %% %lld * %lld", x, (long long)div, (long long)nd->shape,
                          (long long)nd->stride);
        }
        if (i != last) div *= nd->shape;
    }
    sb_puts(sb, terms ? ")" : "0)");
}

/* layout_eval(l, x) appended to sb (the swizzle as XOR of shifted bits) */
static void lay_eval(strbuf *sb, const layout *l, const char *x)
{
    strbuf in = {0};
    lay_sub(&in, l, 0, x);
    if (!l->sw.b) sb_puts(sb, sb_str(&in));
    else if (l->sw.s >= 0)
        sb_printf(sb, "((%s) ^ (((%s) & (I)%lld) >> %d))", sb_str(&in), sb_str(&in),
                  (long long)((((int64_t)1 << l->sw.b) - 1) << (l->sw.m + l->sw.s)), l->sw.s);
    else
        sb_printf(sb, "((%s) ^ (((%s) & (I)%lld) << %d))", sb_str(&in), sb_str(&in),
                  (long long)((((int64_t)1 << l->sw.b) - 1) << l->sw.m), -l->sw.s);
    sb_free(&in);
}

static void local_shape(const dist_layout *l, int64_t *ld)
{
    for (int i = 0; i < l->rank; i++) ld[i] = 1;
    for (int k = 0; k < l->naxes; k++)
        if (!l->axis[k].is_thread && l->axis[k].dim >= 0) ld[l->axis[k].dim] *= l->axis[k].extent;
}

static int const_dims(cg *c, const tile_value *v, int64_t *dims)
{
    for (int i = 0; i < v->type.rank; i++)
        if (!tile_expr_const(v->type.dims[i], &dims[i]) || dims[i] < 1) {
            cg_err(c, TSL_ERR_SHAPE, "tensor '%s' dim %d is not a positive constant", v->name, i);
            return 0;
        }
    return 1;
}

/* The view an operand names (cgc_view_of's rules, the messages the same). */
static int view_of(cg *c, const tile_operand *o, dview *vw)
{
    memset(vw, 0, sizeof *vw);
    if (!o->v || o->v->kind != TILE_V_TENSOR) {
        cg_err(c, TSL_ERR_SEMANTIC, "expected a tensor operand");
        return 0;
    }
    const tile_value *v = o->v;
    vw->v = v;
    vw->rank = v->type.rank;
    if (vw->rank < 1 || vw->rank > CG_MAX_RANK) {
        cg_err(c, TSL_ERR_UNAVAILABLE, "tensor '%s' has rank %d (1..%d here)", v->name, vw->rank, CG_MAX_RANK);
        return 0;
    }
    if (v->type.space != TILE_GLOBAL && !const_dims(c, v, vw->dims)) return 0;
    for (int i = 0; i < vw->rank; i++) vw->ext[i] = -1;
    int tiled = 0;
    const layout *ptiler[CG_MAX_RANK];
    int64_t psize[CG_MAX_RANK];
    for (int s = 0; s < o->nsteps; s++) {
        const tile_step *st = &o->steps[s];
        if (st->kind == TILE_STEP_LOCAL) {
            if (s != 0 || v->type.space != TILE_REGISTER || !v->type.layout ||
                v->type.layout->v.kind != LAYOUT_VALUE_DIST) {
                cg_err(c, TSL_ERR_SEMANTIC, "'.local' is the thread's part of a register tensor, inside a decomposition");
                return 0;
            }
            const dist_layout *dl = &v->type.layout->v.dist;
            vw->local = 1;
            vw->rank = dl->rank;
            local_shape(dl, vw->dims);
            for (int i = 0; i < vw->rank; i++) vw->ext[i] = vw->dims[i];
            continue;
        }
        if (st->n > vw->rank) {
            cg_err(c, TSL_ERR_SHAPE, "%d indices for '%s' of rank %d", st->n, v->name, vw->rank);
            return 0;
        }
        if (st->kind == TILE_STEP_TILE) {
            if (tiled) {
                cg_err(c, TSL_ERR_SEMANTIC, "tile of a tensor of tiles: index it first");
                return 0;
            }
            tiled = 1;
            for (int i = 0; i < vw->rank; i++) {
                int j = i - (vw->rank - st->n); /* tilers right-aligned */
                ptiler[i] = j >= 0 && st->tilers[j] ? &st->tilers[j]->v.data : NULL;
                psize[i] = j >= 0 ? st->sizes[j] : 1;
            }
            continue;
        }
        for (int i = 0; i < vw->rank; i++) {
            if (vw->nchain[i] == DV_CHAIN) {
                cg_err(c, TSL_ERR_UNAVAILABLE, "view chain too deep");
                return 0;
            }
            strbuf x = {0}, off = {0};
            if (i < st->n) {
                sb_puts(&x, "((I)(");
                cg_expr(c, &x, st->idx[i]);
                sb_puts(&x, "))");
            } else {
                sb_puts(&x, "(I)0");
            }
            const layout *tl = NULL;
            if (tiled && ptiler[i]) {
                /* tile x of a non-contiguous tiler: offset = complement(tiler)(x) */
                int64_t ext = vw->ext[i] >= 0 ? vw->ext[i] : vw->dims[i];
                if (v->type.space == TILE_GLOBAL && vw->ext[i] < 0 && !tile_expr_const(v->type.dims[i], &ext)) {
                    cg_err(c, TSL_ERR_UNAVAILABLE, "a non-contiguous tile of global '%s' dim %d needs a constant extent",
                           v->name, i);
                    sb_free(&x);
                    return 0;
                }
                layout comp;
                layout_err le = {{0}, 0};
                if (layout_complement(&comp, ptiler[i], ext, &le)) {
                    cg_err(c, TSL_ERR_SEMANTIC, "tile of '%s' dim %d: %s", v->name, i, le.msg);
                    sb_free(&x);
                    return 0;
                }
                lay_eval(&off, &comp, sb_str(&x));
                tl = ptiler[i];
            } else if (tiled) {
                sb_printf(&off, "(%s * %lld)", sb_str(&x), (long long)psize[i]);
            } else {
                sb_puts(&off, sb_str(&x));
            }
            if (tiled) vw->ext[i] = psize[i];
            if (off.len >= sizeof vw->off[i][0]) {
                cg_err(c, TSL_ERR_UNAVAILABLE, "'%s': a view index too long for the CUDA generator", v->name);
                sb_free(&x);
                sb_free(&off);
                return 0;
            }
            vw->tiler[i][vw->nchain[i]] = tl;
            snprintf(vw->off[i][vw->nchain[i]], sizeof vw->off[i][0], "%s", sb_str(&off));
            vw->nchain[i]++;
            sb_free(&x);
            sb_free(&off);
        }
        tiled = 0;
    }
    if (tiled) {
        cg_err(c, TSL_ERR_SEMANTIC, "a tensor of tiles must be indexed to be transferred");
        return 0;
    }
    return !c->st;
}

/* The base coordinate of view dim i for view coordinate x, into sb. */
static void view_map(strbuf *sb, const dview *vw, int i, const char *x)
{
    strbuf r = {0};
    sb_puts(&r, x);
    for (int s = vw->nchain[i] - 1; s >= 0; s--) {
        strbuf t = {0};
        sb_printf(&t, "(%s + ", vw->off[i][s]);
        if (vw->tiler[i][s]) lay_eval(&t, vw->tiler[i][s], sb_str(&r));
        else sb_puts(&t, sb_str(&r));
        sb_putc(&t, ')');
        sb_free(&r);
        r = t;
    }
    sb_puts(sb, sb_str(&r));
    sb_free(&r);
}

/* ---- the walk's callbacks ------------------------------------------------------------------ */

static tsl_status dc_status(cg *c) { return c->st; }

static tsl_status dc_scalar(void *ctx, const tile_stmt *s)
{
    cg *c = ((cdecomp *)ctx)->c;
    strbuf e = {0};
    cg_expr(c, &e, s->e);
    if (s->kind == TILE_S_SET) cg_line(c, "%s = %s;", cg_name(c, s->v), sb_str(&e));
    else cg_line(c, "%sI %s = %s; (void)%s;", s->kind == TILE_S_LET ? "const " : "", cg_name(c, s->v), sb_str(&e),
                 cg_name(c, s->v));
    sb_free(&e);
    return dc_status(c);
}

/* `let a, b, i = indices g`: every thread's values, as a table */
static tsl_status dc_indices(void *ctx, const tile_stmt *s)
{
    cg *c = ((cdecomp *)ctx)->c;
    const tile_threads *g = &s->group->threads;
    int nt = c->threads, no = g->nouter ? g->nouter : 1;
    if (s->nvs != 1 && s->nvs != no + 1)
        return cg_err(c, TSL_ERR_SHAPE, "indices of '%s': indices give %d values, %d names", s->group->name, no + 1,
                      s->nvs);
    int64_t row[16];
    char err[256];
    strbuf tab = {0};
    for (int t = 0; t < nt && !c->st; t++) {
        if (no + 1 > 16 || tile_decomp_indices(g, t, no + 1, row, err, sizeof err)) {
            cg_err(c, TSL_ERR_SEMANTIC, "indices of '%s': %s", s->group->name, no + 1 > 16 ? "too many" : err);
            break;
        }
        for (int i = 0; i <= no; i++) sb_printf(&tab, "%s%lld", t || i ? ", " : "", (long long)row[i]);
    }
    if (!c->st) {
        int id = c->uid++;
        /* static const: a table in constant data, not a stack array per thread */
        cg_line(c, "static const int tsl_ix%d[%d] = {%s};", id, nt * (no + 1), sb_str(&tab));
        if (s->nvs == 1) {
            cg_line(c, "const I %s = (I)tsl_ix%d[tid * %d + %d]; (void)%s;", cg_name(c, s->vs[0]), id, no + 1, no,
                    cg_name(c, s->vs[0]));
        } else {
            for (int i = 0; i <= no; i++)
                cg_line(c, "const I %s = (I)tsl_ix%d[tid * %d + %d]; (void)%s;", cg_name(c, s->vs[i]), id, no + 1, i,
                        cg_name(c, s->vs[i]));
        }
    }
    sb_free(&tab);
    return dc_status(c);
}

static tsl_status dc_branch(void *ctx, const tile_stmt *s)
{
    cdecomp *dc = ctx;
    cg *c = dc->c;
    strbuf e = {0};
    cg_expr(c, &e, s->e);
    cg_line(c, "if (%s) {", sb_str(&e));
    sb_free(&e);
    c->ind++;
    tsl_status st = tile_decomp_walk(s->body, &dc->vis);
    c->ind--;
    if (!st && s->els) {
        cg_line(c, "} else {");
        c->ind++;
        st = tile_decomp_walk(s->els, &dc->vis);
        c->ind--;
    }
    cg_line(c, "}");
    return st ? st : dc_status(c);
}

static tsl_status dc_loop(void *ctx, const tile_stmt *s)
{
    cdecomp *dc = ctx;
    cg *c = dc->c;
    strbuf lo = {0}, hi = {0}, step = {0};
    cg_expr(c, &lo, s->lo);
    cg_expr(c, &hi, s->hi);
    if (s->step) cg_expr(c, &step, s->step);
    else sb_puts(&step, "1");
    const char *v = cg_name(c, s->v);
    char vn[96];
    snprintf(vn, sizeof vn, "%s", v);
    /* a step that is not positive runs no iteration (the interpreter reports it) */
    cg_line(c, "for (I %s = %s; (%s) > 0 && %s < (%s); %s += (%s)) {", vn, sb_str(&lo), sb_str(&step), vn, sb_str(&hi),
            vn, sb_str(&step));
    sb_free(&lo);
    sb_free(&hi);
    sb_free(&step);
    c->ind++;
    tsl_status st = tile_decomp_walk(s->body, &dc->vis);
    c->ind--;
    cg_line(c, "}");
    return st ? st : dc_status(c);
}

static tsl_status dc_fail(void *ctx, size_t pos, tsl_status st, const char *msg)
{
    cg *c = ((cdecomp *)ctx)->c;
    (void)pos;
    return cg_err(c, st, "%s", msg);
}

static void dc_enter(void *ctx, const tile_stmt *s)
{
    cg *c = ((cdecomp *)ctx)->c;
    if (s->kind != TILE_S_INSTR) return;
    cg_line(c, "/* %s%s */", tile_op_info_of(s->instr.op)->name, s->instr.atom ? " (atom as written)" : "");
}

/* The element of view vw at coordinates cs (C names), as an lvalue into
 * sb; cond gets the condition under which it exists (global bounds, the
 * thread's slots), or stays empty. */
static int elem(cg *c, const dview *vw, char **cs, strbuf *sb, strbuf *cond)
{
    const tile_value *v = vw->v;
    const char *n = cg_name(c, v);
    char nm[96];
    snprintf(nm, sizeof nm, "%s", n);
    if (vw->local) {
        rinfo ri;
        memset(&ri, 0, sizeof ri);
        if (cg_rinfo(c, v, &ri)) return 0;
        for (int i = 0; i < vw->rank; i++)
            sb_printf(cond, "%s(unsigned long long)%s < %lldull", i ? " && " : "", cs[i], (long long)vw->dims[i]);
        sb_printf(sb, "%s[", nm);
        for (int i = 0; i < vw->rank; i++) {
            int64_t rest = 1;
            for (int j = i + 1; j < vw->rank; j++) rest *= vw->dims[j];
            sb_printf(sb, "%s%s * %lld", i ? " + " : "", cs[i], (long long)rest);
        }
        sb_putc(sb, ']');
        if (ri.threads < c->threads) sb_printf(cond, " && tid < %lld", (long long)ri.threads);
        cg_rinfo_free(&ri);
        return 1;
    }
    if (v->type.space == TILE_SHARED) {
        strbuf off = {0};
        if (cg_shared_off(c, &off, v, cs)) return 0;
        sb_printf(sb, "((%s *)(tsl_smem + %lld))[%s]", cg_ctype(v->type.dt), (long long)c->soff[v->id], sb_str(&off));
        sb_free(&off);
        return 1;
    }
    if (v->type.space == TILE_GLOBAL) {
        if (cg_dt_coded(v->type.dt)) {
            cg_err(c, TSL_ERR_UNAVAILABLE, "'%s': packed or low-bit memory inside a decomposition", v->name);
            return 0;
        }
        sb_printf(sb, "%s[", nm);
        for (int i = 0; i < vw->rank; i++) {
            sb_printf(sb, "%s(I)%s * %s_s%d", i ? " + " : "", cs[i], nm, i);
            sb_printf(cond, "%s%s >= 0 && %s < %s_d%d", i ? " && " : "", cs[i], cs[i], nm, i);
        }
        sb_putc(sb, ']');
        return 1;
    }
    cg_err(c, TSL_ERR_SEMANTIC, "a register tensor inside a decomposition is used as '%s.local'", v->name);
    return 0;
}

/* A move that is not a collective atom: this thread's elements one by
 * one, the k-th of the source box (row-major) to the k-th of the
 * destination box, through the value (interp dc_move). */
static tsl_status dc_move(void *ctx, const tile_stmt *s, const target_atom *row)
{
    cg *c = ((cdecomp *)ctx)->c;
    const tile_instr *in = &s->instr;
    (void)row;
    if (!in->has_dst || in->nargs < 1 || !in->args[0].v)
        return cg_err(c, TSL_ERR_UNAVAILABLE, "inside a decomposition only moves 'op SRC -> DST' (and ldmatrix) run");
    dview a, b;
    if (!view_of(c, &in->args[0], &a) || !view_of(c, &in->dst, &b)) return c->st;
    int64_t na, nb, ea[CG_MAX_RANK], eb[CG_MAX_RANK];
    if (tile_decomp_move_box(a.rank, a.ext, b.rank, b.ext, ea, eb, &na, &nb) < 0)
        return cg_err(c, TSL_ERR_SHAPE, "this thread moves %lld elements of '%s' into %lld of '%s'", (long long)na,
                      a.v->name, (long long)nb, b.v->name);
    const dview *vs[2] = {&a, &b};
    const int64_t *es[2] = {ea, eb};
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (I k = 0; k < %lld; k++) {", (long long)na);
    c->ind++;
    strbuf ref[2] = {{0}}, cond[2] = {{0}};
    for (int side = 0; side < 2 && !c->st; side++) {
        const dview *vw = vs[side];
        char *cs[CG_MAX_RANK];
        char names[CG_MAX_RANK][16];
        int64_t div = 1;
        for (int i = vw->rank - 1; i >= 0; i--) {
            snprintf(names[i], sizeof names[i], "%c%d", side ? 'b' : 'a', i);
            cs[i] = names[i];
            char vc[96];
            snprintf(vc, sizeof vc, "(k / %lld %% %lld)", (long long)div, (long long)es[side][i]);
            strbuf m = {0};
            view_map(&m, vw, i, vc);
            cg_line(c, "const I %s = %s;", cs[i], sb_str(&m));
            sb_free(&m);
            div *= es[side][i];
        }
        elem(c, vw, cs, &ref[side], &cond[side]);
    }
    if (!c->st) {
        const tile_dtype st = b.v->type.dt;
        /* the source's value, 0 outside a global tensor; then stored */
        if (cond[0].len)
            cg_line(c, "const double v = (%s) ? (double)tsl_c(%s) : 0.0;", sb_str(&cond[0]), sb_str(&ref[0]));
        else cg_line(c, "const double v = (double)tsl_c(%s);", sb_str(&ref[0]));
        if (cond[1].len) cg_line(c, "if (%s) %s = tsl_to<%s>::f(v);", sb_str(&cond[1]), sb_str(&ref[1]), cg_ctype(st));
        else cg_line(c, "%s = tsl_to<%s>::f(v);", sb_str(&ref[1]), cg_ctype(st));
    }
    for (int i = 0; i < 2; i++) {
        sb_free(&ref[i]);
        sb_free(&cond[i]);
    }
    c->ind--;
    cg_line(c, "}");
    return dc_status(c);
}

/* A collective atom (ldmatrix): the row's instruction, this lane giving
 * the address of its row of 8 (a rank-2 shared view [1, 8]); element e of
 * received register m goes to destination slot dslot[2m + e]. The warp's
 * lanes all run it (the PTX .aligned rule), lanes from 8 x count on
 * giving addresses the instruction does not read. */
static tsl_status dc_collective(void *ctx, const tile_stmt *s, const target_atom *row)
{
    cg *c = ((cdecomp *)ctx)->c;
    const tile_instr *in = &s->instr;
    char err[256];
    int64_t dslot[8];
    const tile_operand *dop = in->has_dst ? &in->dst : NULL;
    if (!row->cu) return cg_err(c, TSL_ERR_UNAVAILABLE, "%s: the CUDA generator does not print it", row->name);
    if (tile_decomp_collective_dst(dop, row, dslot, err, sizeof err)) return cg_err(c, TSL_ERR_SHAPE, "%s", err);
    dview vw;
    if (!view_of(c, &in->args[0], &vw)) return c->st;
    if (vw.local || tile_decomp_collective_src(row, vw.v->type.space, vw.v->type.dt.bits, vw.rank, vw.ext, err,
                                               sizeof err))
        return cg_err(c, TSL_ERR_SHAPE, "%s", vw.local ? "ldmatrix reads a shared tile" : err);
    if (c->threads % 32) return cg_err(c, TSL_ERR_SHAPE, "%s needs whole warps; the block has %d threads", row->name,
                                       c->threads);
    const tile_value *dv = dop->v;
    cg_line(c, "{");
    c->ind++;
    strbuf r0 = {0}, c0 = {0}, off = {0};
    view_map(&r0, &vw, 0, "(I)0");
    view_map(&c0, &vw, 1, "(I)0");
    cg_line(c, "const I lr = %s, lc = %s;", sb_str(&r0), sb_str(&c0));
    char *co[2] = {"lr", "lc"};
    if (!cg_shared_off(c, &off, vw.v, co)) {
        cg_line(c, "const %s *p = (const %s *)(tsl_smem + %lld) + %s;", cg_ctype(vw.v->type.dt), cg_ctype(vw.v->type.dt),
                (long long)c->soff[vw.v->id], sb_str(&off));
        strbuf regs = {0};
        for (int r = 0; r < row->count; r++) sb_printf(&regs, "%sr%d", r ? ", " : "", r);
        cg_line(c, "unsigned %s;", sb_str(&regs));
        cg_line(c, "%s(%s, p);", row->cu, sb_str(&regs));
        for (int i = 0; i < 2 * row->count; i++)
            cg_line(c, "%s[%lld] = tsl_from_bits<%s>((r%d >> %d) & 0xffffu);", cg_name(c, dv), (long long)dslot[i],
                    cg_ctype(dv->type.dt), i / 2, (i % 2) * 16);
        sb_free(&regs);
    }
    sb_free(&r0);
    sb_free(&c0);
    sb_free(&off);
    c->ind--;
    cg_line(c, "}");
    return dc_status(c);
}

void cg_decomp(cg *c, const tile_stmt *s, void (*declare)(cg *, const tile_stmt *))
{
    const tile_instr *in = &s->instr;
    if (in->result && in->result->type.space == TILE_REGISTER) declare(c, s);
    cg_line(c, "{ /* %s decomposed: the body per thread */", tile_op_info_of(in->op)->name);
    c->ind++;
    cdecomp dc = {.c = c};
    dc.vis = (tile_decomp_visitor){.ctx = &dc, .enter = dc_enter, .scalar = dc_scalar, .indices = dc_indices,
                                   .branch = dc_branch, .loop = dc_loop, .collective = dc_collective, .move = dc_move,
                                   .fail = dc_fail};
    tile_decomp_walk(in->decomp, &dc.vis);
    c->ind--;
    cg_line(c, "}");
}
