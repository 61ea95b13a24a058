/* chain.c — recognise a chain of GEMMs with pointwise epilogues (an MLP)
 * as users write it in TC:
 *
 *   h1(b,o) +=! X(b,i) * W1(o,i)        or W1(i,o)
 *   h1(b,o)  = f1(h1(b,o), bias(o), ...) 0+ epilogue ops
 *   h2(b,o) +=! h1(b,i) * W2(o,i)
 *   ...                                 2..GRAPH_MAX_CHAIN (32) layers
 *
 * Every layer but the last writes a temporary read only by its epilogue
 * and the next layer's product, so a kernel may keep it on chip; the
 * rows b cover the same range in every layer, and layer k + 1 reduces
 * over exactly layer k's columns. fuse.c merges the layers' groups into
 * one group (strategy gemm-chain; sched/chain.c lowers it).
 */
#include <string.h>

#include "graph/graph.h"

static const graph_expr *uncast(const graph_expr *e)
{
    while (e->kind == LANG_E_CAST && e->nargs == 1) e = e->args[0];
    return e;
}

static bool zero_lo(const lang_range *r) { return r->lo && r->lo->kind == LANG_SX_CONST && r->lo->value == 0; }

/* A temporary read and written only by ops [first, last]. */
static bool private_to(const graph *g, int t, int first, int last)
{
    const graph_tensor *gt = &g->tensors[t];
    if (gt->kind != GRAPH_T_TEMP) return false;
    for (int i = 0; i < gt->nreaders; i++)
        if (gt->readers[i] < first || gt->readers[i] > last) return false;
    for (int i = 0; i < gt->nwriters; i++)
        if (gt->writers[i] < first || gt->writers[i] > last) return false;
    return true;
}

/* Op c is one layer's product: h(b,o) +=! A(b,i) * W(o,i) | W(i,o) with
 * boxes from 0 to the tensors' extents. */
static bool layer_op(const graph *g, const graph_op *c, int *a, int *w, int *wtrans)
{
    if (!c->contraction || !c->bang || c->assign != LANG_ADD_EQ || c->niter != 2 || c->nvars != 3) return false;
    const graph_expr *e = uncast(c->body);
    if (e->kind != LANG_E_BINARY || e->src->op != LANG_MUL) return false;
    const graph_expr *x = uncast(e->args[0]), *y = uncast(e->args[1]);
    if (x->kind != LANG_E_ACCESS || y->kind != LANG_E_ACCESS) return false;
    const graph_operand *oa = &c->operands[x->operand], *ow = &c->operands[y->operand];
    if (oa->rank != 2 || oa->idx[0].var != 0) {
        const graph_operand *t = oa;
        oa = ow, ow = t;
    }
    if (oa->rank != 2 || ow->rank != 2 || oa->idx[0].var != 0 || oa->idx[1].var != 2) return false;
    if (ow->idx[0].var == 1 && ow->idx[1].var == 2) *wtrans = 1;
    else if (ow->idx[0].var == 2 && ow->idx[1].var == 1) *wtrans = 0;
    else return false;
    const lang_tensor *A = g->def->tensors[oa->tensor], *W = g->def->tensors[ow->tensor];
    for (int v = 0; v < 3; v++)
        if (!zero_lo(&c->box[v])) return false;
    if (!graph_sexpr_equal(c->box[0].hi, A->shape[0]) || !graph_sexpr_equal(c->box[2].hi, A->shape[1]) ||
        !graph_sexpr_equal(c->box[1].hi, W->shape[*wtrans ? 0 : 1]) ||
        !graph_sexpr_equal(c->box[2].hi, W->shape[*wtrans ? 1 : 0]))
        return false;
    *a = oa->tensor;
    *w = ow->tensor;
    return true;
}

bool graph_gemm_chain_match(const graph *g, int first, graph_gemm_chain *ch)
{
    memset(ch, 0, sizeof *ch);
    int i = first, prev = -1;
    while (i < g->nops && ch->nlayers < GRAPH_MAX_CHAIN) {
        const graph_op *c = &g->ops[i];
        int a, w, wt;
        if (!layer_op(g, c, &a, &w, &wt)) break;
        if (prev >= 0) {
            /* reads the previous layer's result over exactly its columns */
            const graph_op *c0 = &g->ops[ch->layer[0]];
            if (a != ch->h[prev] || !graph_sexpr_equal(c->box[0].hi, c0->box[0].hi)) break;
        } else {
            ch->x = a;
        }
        int h = c->operands[0].tensor;
        if (h == w || h == a || w == ch->x) break;
        int k = ch->nlayers++;
        ch->layer[k] = i;
        ch->w[k] = w;
        ch->wtrans[k] = wt;
        ch->h[k] = h;
        prev = k;
        for (i++; i < g->nops && g->ops[i].operands[0].tensor == h && graph_tile_epilogue(g, &g->ops[i], c, h, first);)
            i++;
    }
    if (ch->nlayers < 2) return false;
    ch->layer[ch->nlayers] = i;
    ch->first = first;
    ch->last = i - 1;
    for (int k = 0; k + 1 < ch->nlayers; k++)
        if (!private_to(g, ch->h[k], ch->layer[k], ch->layer[k + 2] - 1)) return false;
    /* the result is written only by its layer and read there only by its epilogue */
    const graph_tensor *go = &g->tensors[ch->h[ch->nlayers - 1]];
    for (int r = 0; r < go->nreaders; r++)
        if (go->readers[r] >= first && go->readers[r] < ch->layer[ch->nlayers - 1]) return false;
    for (int r = 0; r < go->nwriters; r++)
        if (go->writers[r] >= first && go->writers[r] < ch->layer[ch->nlayers - 1]) return false;
    for (int k = 0; k < ch->nlayers; k++)
        if (ch->w[k] == ch->h[ch->nlayers - 1] || ch->x == ch->h[ch->nlayers - 1]) return false;
    return true;
}
