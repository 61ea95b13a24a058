/* build.c — lang_def -> structured ops and producer/consumer edges.
 *
 * Requires a def checked by lang_parse_check (tensors resolved, vars
 * numbered with the LHS vars first). Guarantees one graph_op per statement,
 * operand 0 the LHS write, every RHS read (nested gather reads included) an
 * operand with classified index maps, and edges in statement order. Then
 * hands the graph to graph_fuse (fuse.c).
 */
#include <string.h>

#include "graph/graph.h"

typedef struct build {
    tsl_arena *a;
    graph *g;
    const lang_def *def;
    graph_op *op;
} build;

/* ---- affine analysis of index expressions --------------------------------- */

/* A linear form over the op's vars and the def's sizes. */
typedef struct lin {
    int64_t *coef, *scoef, c;
} lin;

static lin lin_new(build *B)
{
    lin l;
    l.coef = arena_alloc(B->a, sizeof(int64_t) * (size_t)(B->op->nvars + 1));
    l.scoef = arena_alloc(B->a, sizeof(int64_t) * (size_t)(B->def->nsizes + 1));
    l.c = 0;
    return l;
}

static bool lin_is_const(build *B, const lin *l)
{
    for (int v = 0; v < B->op->nvars; v++)
        if (l->coef[v]) return false;
    for (int s = 0; s < B->def->nsizes; s++)
        if (l->scoef[s]) return false;
    return true;
}

/* out = x + k*y, false on overflow. */
static bool lin_axpy(build *B, lin *x, int64_t k, const lin *y)
{
    int64_t t;
    for (int v = 0; v < B->op->nvars; v++)
        if (__builtin_mul_overflow(k, y->coef[v], &t) ||
            __builtin_add_overflow(x->coef[v], t, &x->coef[v]))
            return false;
    for (int s = 0; s < B->def->nsizes; s++)
        if (__builtin_mul_overflow(k, y->scoef[s], &t) ||
            __builtin_add_overflow(x->scoef[s], t, &x->scoef[s]))
            return false;
    return !__builtin_mul_overflow(k, y->c, &t) && !__builtin_add_overflow(x->c, t, &x->c);
}

/* Linear form of e, or false when e is not affine with constant
 * coefficients (i*j, D*i, i/2, a tensor read, ...). */
static bool lin_of(build *B, const lang_expr *e, lin *out)
{
    *out = lin_new(B);
    switch (e->kind) {
    case LANG_E_INT:
        out->c = e->ival;
        return true;
    case LANG_E_INDEX:
        if (e->slot < 0 || e->slot >= B->op->nvars) return false;
        out->coef[e->slot] = 1;
        return true;
    case LANG_E_SIZE:
        if (e->slot < 0 || e->slot >= B->def->nsizes) return false;
        out->scoef[e->slot] = 1;
        return true;
    case LANG_E_UNARY: {
        lin x;
        if (e->op != LANG_NEG || !lin_of(B, e->args[0], &x)) return false;
        return lin_axpy(B, out, -1, &x);
    }
    case LANG_E_BINARY: {
        lin x, y;
        if (e->op != LANG_ADD && e->op != LANG_SUB && e->op != LANG_MUL) return false;
        if (!lin_of(B, e->args[0], &x) || !lin_of(B, e->args[1], &y)) return false;
        if (e->op == LANG_MUL) {
            if (lin_is_const(B, &x)) return lin_axpy(B, out, x.c, &y);
            if (lin_is_const(B, &y)) return lin_axpy(B, out, y.c, &x);
            return false;
        }
        return lin_axpy(B, out, 1, &x) && lin_axpy(B, out, e->op == LANG_ADD ? 1 : -1, &y);
    }
    default:
        return false;
    }
}

static bool expr_has_access(const lang_expr *e)
{
    if (e->kind == LANG_E_ACCESS) return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_has_access(e->args[i])) return true;
    return false;
}

static uint64_t var_bit(int v)
{
    return v >= 0 && v < 64 ? (uint64_t)1 << v : 0;
}

/* Vars an expression mentions (through nested reads too). */
static uint64_t expr_vars(const lang_expr *e)
{
    uint64_t m = e->kind == LANG_E_INDEX ? var_bit(e->slot) : 0;
    for (int i = 0; i < e->nargs; i++) m |= expr_vars(e->args[i]);
    return m;
}

static bool expr_equal(const lang_expr *x, const lang_expr *y)
{
    if (x->kind != y->kind || x->nargs != y->nargs || x->type != y->type) return false;
    switch (x->kind) {
    case LANG_E_INT: return x->ival == y->ival;
    case LANG_E_FLOAT: return x->fval == y->fval;
    case LANG_E_INDEX:
    case LANG_E_SIZE: return x->slot == y->slot;
    case LANG_E_SCALAR: return x->tensor == y->tensor;
    case LANG_E_ACCESS:
        if (x->tensor != y->tensor) return false;
        break;
    default:
        if (x->op != y->op) return false;
        break;
    }
    for (int i = 0; i < x->nargs; i++)
        if (!expr_equal(x->args[i], y->args[i])) return false;
    return true;
}

/* ---- operands and the body ---------------------------------------------------- */

static graph_expr *body_of(build *B, const lang_expr *e);

static void index_of(build *B, const lang_expr *e, graph_index *ix)
{
    lin l;
    ix->src = e;
    ix->var = -1;
    ix->e = body_of(B, e);
    if (expr_has_access(e)) {
        ix->kind = GRAPH_IX_INDIRECT;
    } else if (lin_of(B, e, &l)) {
        ix->kind = GRAPH_IX_AFFINE;
        ix->coef = l.coef;
        ix->scoef = l.scoef;
        ix->c = l.c;
        int nz = 0, v1 = -1;
        for (int v = 0; v < B->op->nvars; v++)
            if (l.coef[v]) nz++, v1 = v;
        bool sizes = false;
        for (int k = 0; k < B->def->nsizes; k++) sizes = sizes || l.scoef[k];
        if (nz == 1 && l.coef[v1] == 1 && l.c == 0 && !sizes) ix->var = v1;
    } else {
        ix->kind = GRAPH_IX_OTHER;
    }
}

/* The operand for a read `e` (an access), shared with an equal earlier read. */
static int operand_of(build *B, const lang_expr *e)
{
    graph_op *op = B->op;
    for (int i = 1; i < op->noperands; i++) {
        graph_operand *o = &op->operands[i];
        if (o->tensor != e->tensor->index || o->rank != e->nargs) continue;
        bool same = true;
        for (int k = 0; k < o->rank && same; k++)
            same = expr_equal(o->idx[k].src, e->args[k]);
        if (same && e->guarded) o->affine = o->identity = false, o->guarded = true;
        if (same) return i;
    }
    graph_operand o = {0};
    o.tensor = e->tensor->index;
    o.rank = e->nargs;
    o.idx = arena_alloc(B->a, sizeof(graph_index) * (size_t)(o.rank + 1));
    o.affine = true;
    for (int k = 0; k < o.rank; k++) {
        index_of(B, e->args[k], &o.idx[k]);
        o.affine = o.affine && o.idx[k].kind == GRAPH_IX_AFFINE;
        o.vars |= expr_vars(e->args[k]);
    }
    o.identity = o.rank == op->niter;
    for (int k = 0; k < o.rank && o.identity; k++) o.identity = o.idx[k].var == k;
    /* in bounds only under its guard: read it masked, as a gather (lang/guard.c) */
    if (e->guarded) o.affine = o.identity = false, o.guarded = true;
    ARENA_PUSH(B->a, op->operands, op->noperands, op->cap_operands, o);
    return op->noperands - 1;
}

static graph_expr *body_of(build *B, const lang_expr *e)
{
    graph_expr *x = arena_alloc(B->a, sizeof *x);
    x->kind = e->kind;
    x->src = e;
    x->operand = -1;
    if (e->kind == LANG_E_ACCESS) {
        x->operand = operand_of(B, e);
        return x;
    }
    x->nargs = e->nargs;
    x->args = arena_alloc(B->a, sizeof(graph_expr *) * (size_t)(e->nargs + 1));
    for (int i = 0; i < e->nargs; i++) x->args[i] = body_of(B, e->args[i]);
    return x;
}

/* ---- op properties --------------------------------------------------------------- */

/* Collect the factors of a product tree: reads (casts around them looked
 * through) into reads[], and whether every other factor is free of vars and
 * reads (a constant, scalar parameter or size). */
static bool product_factors(const graph_expr *x, int *reads, int *nreads)
{
    if (x->kind == LANG_E_BINARY && x->src->op == LANG_MUL)
        return product_factors(x->args[0], reads, nreads) &&
               product_factors(x->args[1], reads, nreads);
    const graph_expr *y = x;
    while (y->kind == LANG_E_CAST) y = y->args[0];
    if (y->kind == LANG_E_ACCESS) {
        if (*nreads == 2) return false;
        reads[(*nreads)++] = y->operand;
        return true;
    }
    return !expr_has_access(x->src) && expr_vars(x->src) == 0;
}

static bool op_is_contraction(const graph_op *op)
{
    int reads[2], n = 0;
    if (op->assign != LANG_ADD_EQ || op->pointwise || op->nvars > 64) return false;
    if (!product_factors(op->body, reads, &n) || n != 2) return false;
    uint64_t par = 0, red = 0;
    for (int v = 0; v < op->nvars; v++) {
        if (v < op->niter) par |= var_bit(v);
        else red |= var_bit(v);
    }
    for (int i = 0; i < 2; i++) {
        const graph_operand *o = &op->operands[reads[i]];
        if (!o->affine || o->tensor == op->operands[0].tensor) return false;
        if ((o->vars & red) != red) return false; /* every reduction var in both */
        if ((o->vars & par) == par) return false; /* each misses a parallel var */
    }
    return true;
}

static void build_op(build *B, const lang_stmt *s, graph_op *op)
{
    B->op = op;
    op->index = s->index;
    op->stmt = s;
    op->nvars = s->nvars;
    op->niter = s->niter;
    op->group = -1;
    lang_range *box = arena_alloc(B->a, sizeof(lang_range) * (size_t)(s->nvars + 1));
    op->iters = arena_alloc(B->a, sizeof(graph_iter) * (size_t)(s->nvars + 1));
    for (int v = 0; v < s->nvars; v++) {
        box[v] = s->vars[v].range;
        op->iters[v] = v < s->niter ? GRAPH_PARALLEL : GRAPH_REDUCTION;
    }
    op->box = box;
    op->assign = s->op;
    op->bang = s->bang;
    op->reads_lhs = s->reads_lhs;
    op->pointwise = s->nvars == s->niter;

    /* operand 0: the LHS, written at the parallel vars in order */
    graph_operand w = {0};
    w.tensor = s->lhs->index;
    w.write = true;
    w.rank = s->niter;
    w.affine = true;
    w.identity = true;
    w.idx = arena_alloc(B->a, sizeof(graph_index) * (size_t)(w.rank + 1));
    for (int k = 0; k < w.rank; k++) {
        graph_index *ix = &w.idx[k];
        ix->kind = GRAPH_IX_AFFINE;
        ix->coef = arena_alloc(B->a, sizeof(int64_t) * (size_t)(s->nvars + 1));
        ix->scoef = arena_alloc(B->a, sizeof(int64_t) * (size_t)(B->def->nsizes + 1));
        ix->coef[k] = 1;
        ix->var = k;
        w.vars |= var_bit(k);
    }
    ARENA_PUSH(B->a, op->operands, op->noperands, op->cap_operands, w);

    op->body = body_of(B, s->rhs);
    op->contraction = op_is_contraction(op);
}

/* ---- tensors and edges ------------------------------------------------------------- */

static void add_edge(build *B, int from, int to, int t, graph_dep dep)
{
    graph *g = B->g;
    for (int i = 0; i < g->nedges; i++) {
        const graph_edge *e = &g->edges[i];
        if (e->from == from && e->to == to && e->tensor == t && e->dep == dep) return;
    }
    graph_edge e = {from, to, t, dep};
    ARENA_PUSH(B->a, g->edges, g->nedges, g->cap_edges, e);
}

static bool op_reads(const graph_op *op, int t)
{
    for (int i = 1; i < op->noperands; i++)
        if (op->operands[i].tensor == t) return true;
    return false;
}

/* Walk the ops in statement order, recording readers/writers and the
 * edges to the latest writer (RAW, WAW) and to readers since it (WAR). */
static void build_edges(build *B)
{
    graph *g = B->g;
    for (int j = 0; j < g->nops; j++) {
        const graph_op *op = &g->ops[j];
        for (int t = 0; t < g->ntensors; t++) {
            graph_tensor *gt = &g->tensors[t];
            bool reads = op_reads(op, t), writes = op->operands[0].tensor == t;
            if (!reads && !writes) continue;
            int last_w = gt->nwriters ? gt->writers[gt->nwriters - 1] : -1;
            if (reads && last_w >= 0) add_edge(B, last_w, j, t, GRAPH_DEP_RAW);
            if (writes) {
                if (last_w >= 0) add_edge(B, last_w, j, t, GRAPH_DEP_WAW);
                for (int r = 0; r < gt->nreaders; r++)
                    if (gt->readers[r] > last_w && gt->readers[r] != j)
                        add_edge(B, gt->readers[r], j, t, GRAPH_DEP_WAR);
            }
            if (reads) ARENA_PUSH(B->a, gt->readers, gt->nreaders, gt->cap_r, j);
            if (writes) ARENA_PUSH(B->a, gt->writers, gt->nwriters, gt->cap_w, j);
        }
    }
}

static graph_tensor_kind tensor_kind(const lang_tensor *t)
{
    if (t->is_scalar) return GRAPH_T_SCALAR;
    bool in = t->flags & LANG_TENSOR_INPUT, out = t->flags & LANG_TENSOR_OUTPUT;
    if (in && out) return GRAPH_T_INOUT;
    if (in) return GRAPH_T_INPUT;
    if (out) return GRAPH_T_OUTPUT;
    return GRAPH_T_TEMP;
}

graph *graph_build(tsl_arena *a, const lang_def *def, tsl_diag *d)
{
    (void)d;
    if (!def) return NULL;
    build B = {.a = a, .def = def};
    graph *g = arena_alloc(a, sizeof *g);
    B.g = g;
    g->def = def;
    g->ntensors = def->ntensors;
    g->tensors = arena_alloc(a, sizeof(graph_tensor) * (size_t)(def->ntensors + 1));
    for (int t = 0; t < def->ntensors; t++) {
        TSL_ASSERT(def->tensors[t]->index == t);
        g->tensors[t].lt = def->tensors[t];
        g->tensors[t].kind = tensor_kind(def->tensors[t]);
        g->tensors[t].group = -1;
    }
    g->nops = def->nstmts;
    g->ops = arena_alloc(a, sizeof(graph_op) * (size_t)(def->nstmts + 1));
    for (int i = 0; i < def->nstmts; i++) build_op(&B, &def->stmts[i], &g->ops[i]);
    build_edges(&B);
    graph_fuse(a, g);
    return g;
}

void graph_bind(tsl_arena *a, graph *g, const lang_bound *bound)
{
    TSL_ASSERT(bound && bound->def == g->def);
    for (int i = 0; i < g->nops; i++) {
        g->ops[i].lo = bound->stmts[i].lo;
        g->ops[i].hi = bound->stmts[i].hi;
    }
    for (int t = 0; t < g->ntensors; t++) g->tensors[t].shape = bound->shapes[t];
    (void)a;
}
