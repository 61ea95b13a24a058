/* attention.c — recognise scaled dot-product attention as users write it
 * in TC: a run of consecutive ops
 *
 *   S(z,i,j)  +=! Q(z,i,d) * K(z,j,d)          the scores (z: batch dims)
 *   S'(z,i,j)  = f(S(z,i,j), ...)              0+ score ops: scale, masks
 *   m(z,i)   max=! S'(z,i,j)                   the row max
 *   p(z,i,j)   = exp(S'(z,i,j) - m(z,i))
 *   l(z,i)    +=! p(z,i,j)                     } either order
 *   O(z,i,e)  +=! p(z,i,j) * V(z,j,e)          }
 *   O(z,i,e)   = O(z,i,e) / l(z,i)
 *
 * or, normalising P first: l, then pn(z,i,j) = p(z,i,j) / l(z,i), then
 * O(z,i,e) +=! pn(z,i,j) * V(z,j,e) (no divide after).
 *
 * A score op is pointwise over S's box and reads the current score tensor
 * at its own index list; it may read index vars (a causal mask `j <= i ?
 * s : -1e30`), scalar parameters, sizes (`/ sqrt(D)`) and tensors the run
 * does not write at plain increasing vars (an additive or boolean mask).
 * S, S', m, p and l are temporaries nobody outside the run reads, so a
 * kernel may keep them on chip. fuse.c merges the run into one group; the
 * scheduler (sched/attention.c) lowers it without materialising S.
 */
#include <string.h>

#include "graph/graph.h"

/* Strip casts: the scheduler computes in f32 whatever the temporaries'
 * dtypes (they are f32 or narrower floats; the interpreter rounds them). */
static const graph_expr *uncast(const graph_expr *e)
{
    while (e->kind == LANG_E_CAST && e->nargs == 1) e = e->args[0];
    return e;
}

/* Operand o reads at exactly vars[0..n) (plain vars, in that order). */
static bool reads_at(const graph_operand *o, const int *vars, int n)
{
    if (o->rank != n || !o->affine) return false;
    for (int k = 0; k < n; k++)
        if (o->idx[k].var != vars[k]) return false;
    return true;
}

/* The operand an access node names, when e (casts stripped) is one. */
static const graph_operand *access_of(const graph_op *op, const graph_expr *e)
{
    e = uncast(e);
    return e->kind == LANG_E_ACCESS ? &op->operands[e->operand] : NULL;
}

static bool float_dt(tsl_dtype t) { return dtype_info_of(t)->is_float; }

/* Box of op var v is [0, hi) with hi the same as tensor dim's extent. */
static bool var_covers(const graph_op *op, int v, const lang_tensor *t, int d)
{
    const lang_range *r = &op->box[v];
    return r->lo && r->lo->kind == LANG_SX_CONST && r->lo->value == 0 && graph_sexpr_equal(r->hi, t->shape[d]);
}

/* A temporary read and written only by ops [first, last]. */
static bool private_temp(const graph *g, int t, int first, int last)
{
    const graph_tensor *gt = &g->tensors[t];
    if (gt->kind != GRAPH_T_TEMP) return false;
    for (int i = 0; i < gt->nreaders; i++)
        if (gt->readers[i] < first || gt->readers[i] > last) return false;
    for (int i = 0; i < gt->nwriters; i++)
        if (gt->writers[i] < first || gt->writers[i] > last) return false;
    return true;
}

/* Written by some op in [first, upto). */
static bool written_in(const graph *g, int t, int first, int upto)
{
    const graph_tensor *gt = &g->tensors[t];
    for (int i = 0; i < gt->nwriters; i++)
        if (gt->writers[i] >= first && gt->writers[i] < upto) return true;
    return false;
}

/* Body nodes a score op may hold: the scheduler lowers each to an
 * elementwise instruction on the score tile. Integer arithmetic only on
 * index vars, sizes and literals under + - * and comparisons. */
static bool score_expr_ok(const graph *g, const graph_op *op, const graph_expr *e)
{
    const lang_expr *s = e->src;
    switch (e->kind) {
    case LANG_E_INT:
    case LANG_E_FLOAT:
    case LANG_E_SIZE:
    case LANG_E_INDEX: return true;
    case LANG_E_SCALAR: return float_dt(s->tensor->dtype);
    case LANG_E_ACCESS: {
        tsl_dtype t = g->def->tensors[op->operands[e->operand].tensor]->dtype;
        return float_dt(t) || t == TSL_DTYPE_BOOL;
    }
    case LANG_E_BINARY:
        if (!float_dt(s->optype) && s->optype != TSL_DTYPE_BOOL && s->op != LANG_ADD && s->op != LANG_SUB &&
            s->op != LANG_MUL && !(s->op >= LANG_EQ && s->op <= LANG_GE))
            return false;
        if (s->op == LANG_MOD) return false;
        break;
    case LANG_E_CAST:
        if (!float_dt(s->type) && s->type != TSL_DTYPE_BOOL) return false;
        break;
    case LANG_E_UNARY:
    case LANG_E_SELECT:
    case LANG_E_CALL: break;
    default: return false;
    }
    for (int i = 0; i < e->nargs; i++)
        if (!score_expr_ok(g, op, e->args[i])) return false;
    return true;
}

/* A score op on current score tensor s (nb batch dims, box of qk's first
 * nb + 2 vars). */
static bool score_op(const graph *g, const graph_op *op, const graph_op *qk, int s, int first)
{
    int nb2 = qk->niter;
    if (!op->pointwise || op->nvars != nb2 || op->assign != LANG_ASSIGN) return false;
    for (int v = 0; v < nb2; v++)
        if (!graph_sexpr_equal(op->box[v].lo, qk->box[v].lo) || !graph_sexpr_equal(op->box[v].hi, qk->box[v].hi))
            return false;
    bool reads_s = false;
    for (int k = 1; k < op->noperands; k++) {
        const graph_operand *o = &op->operands[k];
        if (o->tensor == s) {
            if (!o->identity) return false;
            reads_s = true;
            continue;
        }
        if (written_in(g, o->tensor, first, op->index)) return false;
        /* a mask: plain increasing vars, i and j among them */
        int last = -1;
        if (!o->affine || o->guarded) return false;
        for (int d = 0; d < o->rank; d++) {
            if (o->idx[d].var <= last) return false;
            last = o->idx[d].var;
        }
    }
    return reads_s && score_expr_ok(g, op, op->body);
}

bool graph_attention_match(const graph *g, int first, graph_attention *at)
{
    memset(at, 0, sizeof *at);
    if (first < 0 || first >= g->nops) return false;
    const graph_op *qk = &g->ops[first];
    if (!qk->contraction || !qk->bang || qk->assign != LANG_ADD_EQ || qk->niter < 2 || qk->nvars != qk->niter + 1)
        return false;
    int nb = qk->niter - 2, vi = nb, vj = nb + 1, vd = nb + 2;
    if (nb > 2) return false; /* the grid has one dim for the flattened batch */
    const graph_expr *prod = uncast(qk->body);
    if (prod->kind != LANG_E_BINARY || prod->src->op != LANG_MUL) return false;
    const graph_operand *x = access_of(qk, prod->args[0]), *y = access_of(qk, prod->args[1]);
    if (!x || !y) return false;
    int qv[4], kv[4];
    for (int z = 0; z < nb; z++) qv[z] = kv[z] = z;
    qv[nb] = vi, qv[nb + 1] = vd, kv[nb] = vj, kv[nb + 1] = vd;
    if (!reads_at(x, qv, nb + 2)) {
        const graph_operand *t = x;
        x = y, y = t;
    }
    if (!reads_at(x, qv, nb + 2) || !reads_at(y, kv, nb + 2)) return false;
    at->nb = nb;
    at->qk = first;
    at->q = x->tensor;
    at->k = y->tensor;
    const lang_tensor *Q = g->def->tensors[at->q], *K = g->def->tensors[at->k];
    for (int z = 0; z < nb; z++)
        if (!var_covers(qk, z, Q, z) || !var_covers(qk, z, K, z)) return false;
    if (!var_covers(qk, vi, Q, nb) || !var_covers(qk, vj, K, nb) || !var_covers(qk, vd, Q, nb + 1) ||
        !var_covers(qk, vd, K, nb + 1))
        return false;

    /* score ops, then the row max */
    int s = qk->operands[0].tensor, i = first + 1;
    at->score_first = i;
    while (i < g->nops && score_op(g, &g->ops[i], qk, s, first)) s = g->ops[i++].operands[0].tensor;
    at->nscore = i - at->score_first;
    at->s = s;
    if (i >= g->nops) return false;
    const graph_op *mx = &g->ops[i];
    int rowv[4];
    for (int z = 0; z <= nb + 1; z++) rowv[z] = z;
    if (mx->assign != LANG_MAX_EQ || !mx->bang || mx->niter != nb + 1 || mx->nvars != nb + 2) return false;
    const graph_operand *ms = access_of(mx, mx->body);
    if (!ms || ms->tensor != s || !reads_at(ms, rowv, nb + 2)) return false;
    for (int v = 0; v < nb + 2; v++)
        if (!graph_sexpr_equal(mx->box[v].hi, qk->box[v].hi)) return false;
    at->rowmax = i++;
    int m = mx->operands[0].tensor;

    /* p = exp(S' - m) */
    if (i >= g->nops) return false;
    const graph_op *ex = &g->ops[i];
    if (!ex->pointwise || ex->nvars != nb + 2 || ex->assign != LANG_ASSIGN) return false;
    const graph_expr *e = uncast(ex->body);
    if (e->kind != LANG_E_CALL || e->src->op != LANG_EXP) return false;
    e = uncast(e->args[0]);
    if (e->kind != LANG_E_BINARY || e->src->op != LANG_SUB) return false;
    const graph_operand *es = access_of(ex, e->args[0]), *em = access_of(ex, e->args[1]);
    if (!es || !em || es->tensor != s || !es->identity || em->tensor != m || !reads_at(em, rowv, nb + 1))
        return false;
    for (int v = 0; v < nb + 2; v++)
        if (!graph_sexpr_equal(ex->box[v].hi, qk->box[v].hi)) return false;
    at->exp = i++;
    int p = ex->operands[0].tensor;

    /* l +=! p and O +=! p * V, in either order; or l, pn = p / l, O +=! pn * V */
    at->sum = at->pv = at->norm = at->div = -1;
    int pin = p; /* what PV reads */
    for (int n = 0; n < 3 && i < g->nops && (at->pv < 0 || at->sum < 0); n++, i++) {
        const graph_op *op = &g->ops[i];
        if (at->sum < 0 && op->assign == LANG_ADD_EQ && op->bang && op->niter == nb + 1 && op->nvars == nb + 2) {
            const graph_operand *o = access_of(op, op->body);
            if (!o || o->tensor != p || !reads_at(o, rowv, nb + 2)) return false;
            at->sum = i;
            continue;
        }
        if (at->sum >= 0 && at->norm < 0 && op->pointwise && op->assign == LANG_ASSIGN && op->nvars == nb + 2) {
            e = uncast(op->body);
            const graph_operand *nn = e->kind == LANG_E_BINARY && e->src->op == LANG_DIV ? access_of(op, e->args[0]) : NULL;
            const graph_operand *nd = nn ? access_of(op, e->args[1]) : NULL;
            if (!nd || nn->tensor != p || !nn->identity || nd->tensor != g->ops[at->sum].operands[0].tensor ||
                !reads_at(nd, rowv, nb + 1))
                return false;
            for (int v = 0; v < nb + 2; v++)
                if (!graph_sexpr_equal(op->box[v].hi, qk->box[v].hi)) return false;
            at->norm = i;
            pin = op->operands[0].tensor;
            continue;
        }
        if (at->pv >= 0 || !op->contraction || !op->bang || op->niter != nb + 2 || op->nvars != nb + 3) return false;
        const graph_expr *pr = uncast(op->body);
        if (pr->kind != LANG_E_BINARY || pr->src->op != LANG_MUL) return false;
        const graph_operand *a = access_of(op, pr->args[0]), *b = access_of(op, pr->args[1]);
        if (!a || !b) return false;
        if (a->tensor != pin) {
            const graph_operand *t = a;
            a = b, b = t;
        }
        int pv_[4], vv[4];
        for (int z = 0; z < nb; z++) pv_[z] = vv[z] = z;
        pv_[nb] = nb, pv_[nb + 1] = nb + 2; /* p(z, i, j): j is the reduction var */
        vv[nb] = nb + 2, vv[nb + 1] = nb + 1;
        if (a->tensor != pin || !reads_at(a, pv_, nb + 2) || !reads_at(b, vv, nb + 2)) return false;
        const lang_tensor *V = g->def->tensors[b->tensor];
        for (int z = 0; z < nb; z++)
            if (!var_covers(op, z, V, z)) return false;
        if (!var_covers(op, nb + 2, V, nb) || !var_covers(op, nb + 1, V, nb + 1) ||
            !graph_sexpr_equal(op->box[nb].hi, qk->box[vi].hi) || !graph_sexpr_equal(op->box[nb + 2].hi, qk->box[vj].hi))
            return false;
        at->pv = i;
        at->v = b->tensor;
        at->o = op->operands[0].tensor;
    }
    if (at->sum < 0 || at->pv < 0) return false;
    int l = g->ops[at->sum].operands[0].tensor;
    at->first = first;
    if (at->norm >= 0) {
        if (at->pv < at->norm) return false;
        at->last = at->pv;
        if (!private_temp(g, pin, first, at->last)) return false;
    } else {
        /* O = O / l */
        if (i >= g->nops) return false;
        const graph_op *dv = &g->ops[i];
        if (!dv->pointwise || dv->assign != LANG_ASSIGN || dv->operands[0].tensor != at->o || dv->nvars != nb + 2)
            return false;
        e = uncast(dv->body);
        if (e->kind != LANG_E_BINARY || e->src->op != LANG_DIV) return false;
        const graph_operand *dn = access_of(dv, e->args[0]), *dd = access_of(dv, e->args[1]);
        if (!dn || !dd || dn->tensor != at->o || !dn->identity || dd->tensor != l || !reads_at(dd, rowv, nb + 1))
            return false;
        at->div = i;
        at->last = i;
    }

    /* the intermediates stay inside; O is written only here */
    for (int k = first; k < at->rowmax; k++)
        if (!private_temp(g, g->ops[k].operands[0].tensor, first, at->last)) return false;
    if (!private_temp(g, m, first, at->last) || !private_temp(g, p, first, at->last) ||
        !private_temp(g, l, first, at->last))
        return false;
    const graph_tensor *go = &g->tensors[at->o];
    for (int k = 0; k < go->nreaders; k++)
        if (go->readers[k] >= first && go->readers[k] <= at->last && go->readers[k] != at->div) return false;
    for (int k = 0; k < go->nwriters; k++)
        if (go->writers[k] >= first && go->writers[k] <= at->last && go->writers[k] != at->pv &&
            go->writers[k] != at->div)
            return false;
    if (at->o == at->q || at->o == at->k || at->o == at->v) return false;
    for (int k = at->score_first; k < at->rowmax; k++)
        for (int n = 1; n < g->ops[k].noperands; n++)
            if (g->ops[k].operands[n].tensor == at->o) return false;
    return true;
}
