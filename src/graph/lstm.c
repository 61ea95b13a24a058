/* lstm.c — recognise one LSTM cell step as users write it in TC
 * (examples/lstm.tc):
 *
 *   gates(b,g,h) +=! X(b,i) * Wx(g,h,i)          the input product
 *   gates(b,g,h) += Hprev(b,j) * Wh(g,h,j)       the recurrent product
 *   gates(b,g,h) = gates(b,g,h) + bias(g,h)      0+ gate ops
 *   Cn(b,h) = sigmoid(gates(b,1,h)) * Cprev(b,h) + ...    1+ tail ops
 *   Hn(b,h) = sigmoid(gates(b,3,h)) * tanh(Cn(b,h))
 *
 * X (B,I) and Hprev (B,H) are read at (b, k), the weights (G,H,K) at
 * (g, h, k), every box from 0 to the tensors' extents, and G is 4: a
 * constant 4, or a size symbol (the scheduler's launch is then guarded
 * by G == 4). A gate op is pointwise over gates' box, reads gates at the
 * identity and other tensors at (g,h), (b,h), (h) or (b). A tail op is
 * pointwise over (b, h) with the products' ranges, reads gates only at
 * (b, c, h) for a constant c in 0..3, tensors an earlier tail op wrote at
 * the identity, other tensors at plain increasing vars; what it writes
 * is neither gates nor anything the products or gate ops read, and is
 * read in the run only at the identity by tail ops. gates is a
 * temporary nobody outside the run touches. Bodies hold only what the
 * strategies' statement bodies lower (arithmetic, exp/log/tanh/sigmoid,
 * max/min, float casts). Anything else keeps the groups of fuse.c's
 * rules. fuse.c merges the run into one `lstm` group; sched/lstm.c lowers
 * it as one kernel whose four gate values of a (b,h) meet in registers.
 */
#include <string.h>

#include "graph/graph.h"

static bool zero_lo(const lang_range *r) { return r->lo && r->lo->kind == LANG_SX_CONST && r->lo->value == 0; }

static bool same_range(const lang_range *x, const lang_range *y)
{
    return graph_sexpr_equal(x->lo, y->lo) && graph_sexpr_equal(x->hi, y->hi);
}

/* Operand o reads at exactly vars[0..n). */
static bool reads_at(const graph_operand *o, const int *vars, int n)
{
    if (o->rank != n || !o->affine || o->guarded) return false;
    for (int k = 0; k < n; k++)
        if (o->idx[k].var != vars[k]) return false;
    return true;
}

/* Op c is gates(b,g,h) +=[!] A(b,k) * W(g,h,k), boxes from 0 to the
 * extents; *a, *w the tensors. */
static bool product_op(const graph *g, const graph_op *c, int *a, int *w)
{
    if (!c->contraction || c->assign != LANG_ADD_EQ || c->niter != 3 || c->nvars != 4 || c->noperands != 3 ||
        !c->operands[0].identity)
        return false;
    const graph_expr *e = c->body;
    if (e->kind != LANG_E_BINARY || e->src->op != LANG_MUL || e->args[0]->kind != LANG_E_ACCESS ||
        e->args[1]->kind != LANG_E_ACCESS)
        return false;
    const graph_operand *oa = &c->operands[e->args[0]->operand], *ow = &c->operands[e->args[1]->operand];
    static const int av[2] = {0, 3}, wv[3] = {1, 2, 3};
    if (!reads_at(oa, av, 2)) {
        const graph_operand *t = oa;
        oa = ow, ow = t;
    }
    if (!reads_at(oa, av, 2) || !reads_at(ow, wv, 3)) return false;
    const lang_tensor *A = g->def->tensors[oa->tensor], *W = g->def->tensors[ow->tensor];
    for (int v = 0; v < 4; v++)
        if (!zero_lo(&c->box[v])) return false;
    if (!graph_sexpr_equal(c->box[0].hi, A->shape[0]) || !graph_sexpr_equal(c->box[3].hi, A->shape[1]) ||
        !graph_sexpr_equal(c->box[1].hi, W->shape[0]) || !graph_sexpr_equal(c->box[2].hi, W->shape[1]) ||
        !graph_sexpr_equal(c->box[3].hi, W->shape[2]))
        return false;
    /* G: 4, or a size symbol the launch's guard pins to 4 */
    const lang_sexpr *G = W->shape[0];
    if (G->kind == LANG_SX_CONST ? G->value != 4 : G->kind != LANG_SX_SYM) return false;
    *a = oa->tensor;
    *w = ow->tensor;
    return true;
}

/* Body nodes the strategies' statement bodies lower (sched/blocks.c,
 * sched_blk_body): float arithmetic, the unary calls, max/min, float
 * casts, literals, float scalars, sizes and reads. */
static bool body_ok(const graph_expr *e)
{
    const lang_expr *s = e->src;
    switch (e->kind) {
    case LANG_E_INT:
    case LANG_E_FLOAT:
    case LANG_E_SIZE:
    case LANG_E_ACCESS: return true;
    case LANG_E_SCALAR: return dtype_info_of(s->tensor->dtype)->is_float;
    case LANG_E_UNARY:
        if (s->op != LANG_NEG) return false;
        break;
    case LANG_E_BINARY:
        if (!dtype_info_of(s->optype)->is_float ||
            (s->op != LANG_ADD && s->op != LANG_SUB && s->op != LANG_MUL && s->op != LANG_DIV))
            return false;
        break;
    case LANG_E_CALL:
        if (!dtype_info_of(s->type)->is_float) return false;
        if (e->nargs == 2 ? s->op != LANG_MAX && s->op != LANG_MIN
                          : s->op != LANG_EXP && s->op != LANG_LOG && s->op != LANG_SQRT && s->op != LANG_RSQRT &&
                                s->op != LANG_TANH && s->op != LANG_SIGMOID && s->op != LANG_ABS && s->op != LANG_ERF)
            return false;
        break;
    case LANG_E_CAST:
        if (!dtype_info_of(s->type)->is_float) return false;
        break;
    default: return false;
    }
    for (int i = 0; i < e->nargs; i++)
        if (!body_ok(e->args[i])) return false;
    return true;
}

static bool float_io(const graph *g, int t)
{
    tsl_dtype d = g->def->tensors[t]->dtype;
    return d == TSL_DTYPE_F16 || d == TSL_DTYPE_BF16 || d == TSL_DTYPE_F32;
}

static bool written_in(const graph *g, int t, int first, int upto)
{
    const graph_tensor *gt = &g->tensors[t];
    for (int i = 0; i < gt->nwriters; i++)
        if (gt->writers[i] >= first && gt->writers[i] < upto) return true;
    return false;
}

/* A gate op over p's box: gates(b,g,h) = f(gates(b,g,h), bias(g,h), ...). */
static bool gate_op(const graph *g, const graph_op *op, const graph_op *p, int gates, int first)
{
    if (!op->pointwise || op->assign != LANG_ASSIGN || op->nvars != 3 || op->operands[0].tensor != gates ||
        !op->operands[0].identity || !body_ok(op->body))
        return false;
    for (int v = 0; v < 3; v++)
        if (!same_range(&op->box[v], &p->box[v])) return false;
    static const int forms[4][2] = {{1, 2}, {0, 2}, {2, -1}, {0, -1}}; /* (g,h) (b,h) (h) (b) */
    for (int k = 1; k < op->noperands; k++) {
        const graph_operand *o = &op->operands[k];
        if (o->tensor == gates) {
            if (!o->identity) return false;
            continue;
        }
        if (written_in(g, o->tensor, first, op->index) || !float_io(g, o->tensor)) return false;
        bool ok = false;
        for (int f = 0; f < 4 && !ok; f++) ok = reads_at(o, forms[f], forms[f][1] < 0 ? 1 : 2);
        if (!ok) return false;
    }
    return true;
}

/* Operand o reads gates at (b, c, h) with a constant c in 0..3: c, else -1. */
static int gate_read(const graph *g, const graph_operand *o, int nvars)
{
    if (o->rank != 3 || !o->affine || o->guarded || o->idx[0].var != 0 || o->idx[2].var != 1) return -1;
    const graph_index *ix = &o->idx[1];
    for (int v = 0; v < nvars; v++)
        if (ix->coef[v]) return -1;
    for (int s = 0; s < g->def->nsizes; s++)
        if (ix->scoef && ix->scoef[s]) return -1;
    return ix->c >= 0 && ix->c <= 3 ? (int)ix->c : -1;
}

/* A tail op over (b, h): reads gates at (b, c, h), tensors earlier tail
 * ops wrote at the identity, others at plain increasing vars. */
static bool tail_op(const graph *g, const graph_op *op, const graph_op *p, const graph_lstm *L, int tail)
{
    if (!op->pointwise || op->assign != LANG_ASSIGN || op->nvars != 2 || op->niter != 2 ||
        !op->operands[0].identity || !body_ok(op->body))
        return false;
    if (!same_range(&op->box[0], &p->box[0]) || !same_range(&op->box[1], &p->box[2])) return false;
    int t = op->operands[0].tensor;
    if (t == L->gates || !float_io(g, t)) return false;
    /* nothing the products or gate ops read */
    for (int i = L->first; i < tail; i++)
        for (int k = 0; k < g->ops[i].noperands; k++)
            if (g->ops[i].operands[k].tensor == t) return false;
    for (int k = 1; k < op->noperands; k++) {
        const graph_operand *o = &op->operands[k];
        if (o->tensor == L->gates) {
            if (gate_read(g, o, op->nvars) < 0) return false;
            continue;
        }
        if (!float_io(g, o->tensor) || !o->affine || o->guarded) return false;
        if (written_in(g, o->tensor, tail, op->index + 1) && !o->identity) return false;
        int last = -1;
        for (int d = 0; d < o->rank; d++) {
            if (o->idx[d].var <= last) return false;
            last = o->idx[d].var;
        }
    }
    return true;
}

bool graph_lstm_match(const graph *g, int first, graph_lstm *L)
{
    memset(L, 0, sizeof *L);
    if (first < 0 || first + 2 >= g->nops) return false;
    const graph_op *p0 = &g->ops[first], *p1 = &g->ops[first + 1];
    int a0, w0, a1, w1;
    if (!product_op(g, p0, &a0, &w0) || !p0->bang || !product_op(g, p1, &a1, &w1) || p1->bang) return false;
    int gates = p0->operands[0].tensor;
    if (p1->operands[0].tensor != gates || g->tensors[gates].kind != GRAPH_T_TEMP) return false;
    for (int v = 0; v < 3; v++)
        if (!same_range(&p0->box[v], &p1->box[v])) return false;
    if (a0 == gates || a1 == gates || w0 == gates || w1 == gates) return false;
    if (!float_io(g, a0) || !float_io(g, a1) || !float_io(g, w0) || !float_io(g, w1)) return false;
    L->first = first;
    L->prod[0] = first, L->prod[1] = first + 1;
    L->a[0] = a0, L->w[0] = w0, L->a[1] = a1, L->w[1] = w1;
    L->gates = gates;
    int i = first + 2;
    while (i < g->nops && g->ops[i].operands[0].tensor == gates && gate_op(g, &g->ops[i], p0, gates, first)) i++;
    L->tail = i;
    bool reads_gates = false;
    for (; i < g->nops && tail_op(g, &g->ops[i], p0, L, L->tail); i++)
        for (int k = 1; k < g->ops[i].noperands; k++) reads_gates |= g->ops[i].operands[k].tensor == gates;
    if (i == L->tail || !reads_gates) return false;
    L->last = i - 1;
    /* gates stays in the run */
    const graph_tensor *gt = &g->tensors[gates];
    for (int r = 0; r < gt->nreaders; r++)
        if (gt->readers[r] < first || gt->readers[r] > L->last) return false;
    for (int r = 0; r < gt->nwriters; r++)
        if (gt->writers[r] < first || gt->writers[r] > L->last) return false;
    /* what the tail writes is read in the run only by tail ops, at the identity */
    for (int j = L->tail; j <= L->last; j++) {
        const graph_tensor *tt = &g->tensors[g->ops[j].operands[0].tensor];
        for (int r = 0; r < tt->nreaders; r++) {
            int q = tt->readers[r];
            if (q < first || q > L->last) continue;
            if (q < L->tail) return false;
            for (int k = 1; k < g->ops[q].noperands; k++)
                if (g->ops[q].operands[k].tensor == g->ops[j].operands[0].tensor && !g->ops[q].operands[k].identity)
                    return false;
        }
    }
    return true;
}
