/* fuse.c — group the ops of a graph into kernels and pick each group's
 * strategy.
 *
 * Requires ops, operands and readers/writers built (build.c). Guarantees
 * every op in exactly one group, groups consecutive runs of statements in
 * order, group->rows leading iteration dims shared by all its ops, the
 * internal flag on temporaries used by one group only, and a strategy with
 * a reason on every group.
 *
 * The model: a group computes one "row" (a point of its `rows` leading
 * parallel dims) at a time, running its ops in statement order over the
 * row's inner dims, so values produced inside the group can stay on chip
 * as long as every consumer in the group reads them from the same row at
 * plain index variables. Two shapes of group:
 *   - row groups (elementwise, row reductions and their pointwise
 *     neighbours): an op joins when all its reads of tensors the group
 *     wrote use its own row vars for the row dims and plain vars with the
 *     producer's ranges for the inner dims, and nothing it overwrites is
 *     read by the group across rows;
 *   - contraction groups: pointwise producers of the contraction's operands
 *     (pure maps: prologue) or of its accumulator (init) may precede it,
 *     and pointwise ops over exactly its output space (epilogue) follow it.
 * Anything else starts a new group; its inputs go through memory.
 * Afterwards, the groups a recognised chain of contractions spans
 * (attention.c: QK^T, score ops, softmax, PV; chain.c: GEMMs with
 * epilogues, an MLP; lstm.c: an LSTM cell's two products, gate ops and
 * cell update) are merged into one group whose strategy keeps the
 * intermediates on chip.
 */
#include <string.h>

#include "graph/graph.h"

const char *graph_strategy_name(graph_strategy s)
{
    static const char *const names[] = {
#define X(n, s) s,
        GRAPH_STRATEGIES(X)
#undef X
    };
    _Static_assert(TSL_COUNTOF(names) == GRAPH_STRATEGY_COUNT, "strategy names");
    return (unsigned)s < GRAPH_STRATEGY_COUNT ? names[s] : "?";
}

/* ---- symbolic equality ---------------------------------------------------------- */

static bool sexpr_const(const lang_sexpr *e, int64_t *v)
{
    return lang_sexpr_eval(e, NULL, v) == 0;
}

bool graph_sexpr_equal(const lang_sexpr *x, const lang_sexpr *y)
{
    int64_t a, b;
    if (x == y) return true;
    if (!x || !y) return false;
    bool cx = sexpr_const(x, &a), cy = sexpr_const(y, &b);
    if (cx || cy) return cx && cy && a == b;
    if (x->kind != y->kind) return false;
    if (x->kind == LANG_SX_SYM) return x->sym == y->sym;
    if (x->kind == LANG_SX_CONST) return x->value == y->value;
    return graph_sexpr_equal(x->a, y->a) && graph_sexpr_equal(x->b, y->b);
}

static bool range_equal(const lang_range *x, const lang_range *y)
{
    return graph_sexpr_equal(x->lo, y->lo) && graph_sexpr_equal(x->hi, y->hi);
}

/* ---- the group being formed --------------------------------------------------------- */

typedef struct cur {
    graph *g;
    const int *in_first; /* edges in_first[j] .. in_first[j+1]-1 go to op j */
    int first, nops;  /* ops [first, first+nops) */
    int rows;
    bool reduces;     /* holds a non-contraction reduction op */
    int contraction;  /* the contraction op, or -1 */
} cur;

static bool in_cur(const cur *c, int op)
{
    return op >= c->first && op < c->first + c->nops;
}

/* The first of a tensor's writers (statement order) at or after op `from`. */
static int first_writer_from(const graph_tensor *gt, int from)
{
    int lo = 0, hi = gt->nwriters;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (gt->writers[mid] < from) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool written_in_cur(const cur *c, int t)
{
    const graph_tensor *gt = &c->g->tensors[t];
    int w = first_writer_from(gt, c->first);
    return w < gt->nwriters && in_cur(c, gt->writers[w]);
}

/* The leading r indices of o are the vars 0..r-1 in order. */
static bool row_compatible(const graph_operand *o, int r)
{
    if (o->rank < r) return false;
    for (int k = 0; k < r; k++)
        if (o->idx[k].var != k) return false;
    return true;
}

/* Every index a plain var, each var at most once. */
static bool plain_distinct(const graph_operand *o)
{
    uint64_t seen = 0;
    for (int k = 0; k < o->rank; k++) {
        int v = o->idx[k].var;
        if (v < 0 || v >= 64 || (seen >> v & 1)) return false;
        seen |= (uint64_t)1 << v;
    }
    return true;
}

/* Read o of op b covers, dim by dim, exactly the ranges the group's writers
 * of the tensor produced. */
static bool ranges_match_writers(const cur *c, const graph_op *b, const graph_operand *o)
{
    const graph_tensor *gt = &c->g->tensors[o->tensor];
    for (int i = first_writer_from(gt, c->first); i < gt->nwriters && in_cur(c, gt->writers[i]); i++) {
        const graph_op *w = &c->g->ops[gt->writers[i]];
        for (int k = 0; k < o->rank; k++)
            if (!range_equal(&b->box[o->idx[k].var], &w->box[k])) return false;
    }
    return true;
}

/* Every access inside the group of a tensor that b overwrites stays in its
 * row (r row dims), so overwriting it row by row is safe. */
static bool writes_safe(const cur *c, const graph_op *b, int r)
{
    int t = b->operands[0].tensor;
    for (int i = c->first; i < c->first + c->nops; i++) {
        const graph_op *p = &c->g->ops[i];
        for (int k = 0; k < p->noperands; k++)
            if (p->operands[k].tensor == t && !row_compatible(&p->operands[k], r)) return false;
    }
    return true;
}

/* An op that only maps elements: no reductions, every read at plain vars
 * in increasing order (the identity or a broadcast). */
static bool pure_map(const graph_op *p)
{
    if (!p->pointwise) return false;
    for (int k = 1; k < p->noperands; k++) {
        const graph_operand *o = &p->operands[k];
        int last = -1;
        for (int d = 0; d < o->rank; d++) {
            if (o->idx[d].var <= last) return false;
            last = o->idx[d].var;
        }
    }
    return true;
}

static bool same_leading_box(const graph_op *x, const graph_op *y, int r)
{
    if (x->nvars < r || y->nvars < r) return false;
    for (int v = 0; v < r; v++)
        if (!range_equal(&x->box[v], &y->box[v])) return false;
    return true;
}

/* Contraction b after an all-pointwise group: every op of the group must be
 * an init of b's accumulator over b's output box, or a pure-map prologue
 * producing a temporary read only inside the group and by b. */
static bool join_contraction(const cur *c, const graph_op *b)
{
    graph *g = c->g;
    int acc = b->operands[0].tensor;
    for (int i = c->first; i < c->first + c->nops; i++) {
        const graph_op *p = &g->ops[i];
        int t = p->operands[0].tensor;
        if (t == acc) {
            /* the init runs on the output tile: it may read only outside
             * values and the accumulator itself at its own index */
            if (p->nvars != b->niter || !same_leading_box(p, b, b->niter)) return false;
            for (int k = 1; k < p->noperands; k++) {
                const graph_operand *o = &p->operands[k];
                if (written_in_cur(c, o->tensor) && !(o->tensor == acc && o->identity))
                    return false;
            }
            continue;
        }
        for (int k = 1; k < p->noperands; k++)
            if (p->operands[k].tensor == acc) return false; /* prologue reading the accumulator */
        const graph_tensor *gt = &g->tensors[t];
        if (gt->kind != GRAPH_T_TEMP || !pure_map(p)) return false;
        bool used_by_b = false;
        for (int r = 0; r < gt->nreaders; r++) {
            int q = gt->readers[r];
            if (q == b->index) used_by_b = true;
            else if (!in_cur(c, q)) return false;
        }
        for (int w = 0; w < gt->nwriters; w++)
            if (!in_cur(c, gt->writers[w])) return false;
        if (!used_by_b) {
            /* a temporary feeding another prologue op only */
            bool feeds = false;
            for (int r = 0; r < gt->nreaders; r++) feeds = feeds || in_cur(c, gt->readers[r]);
            if (!feeds) return false;
        }
    }
    for (int k = 1; k < b->noperands; k++) {
        const graph_operand *o = &b->operands[k];
        if (!written_in_cur(c, o->tensor)) continue;
        if (o->tensor == acc) {
            if (!o->identity) return false;
        } else if (!plain_distinct(o) || !ranges_match_writers(c, b, o)) {
            return false;
        }
    }
    return true;
}

/* Pointwise b after a contraction group: exactly the contraction's output
 * box, reading the group's results at the identity. */
static bool join_epilogue(const cur *c, const graph_op *b)
{
    const graph_op *k = &c->g->ops[c->contraction];
    if (!b->pointwise || b->nvars != k->niter || !same_leading_box(b, k, k->niter)) return false;
    for (int i = 1; i < b->noperands; i++) {
        const graph_operand *o = &b->operands[i];
        if (written_in_cur(c, o->tensor) && !o->identity) return false;
    }
    return writes_safe(c, b, c->rows);
}

/* The row rule; *rows gets the group's row count with b in it. */
static bool join_rows(const cur *c, const graph_op *b, int *rows)
{
    int r = c->reduces ? c->rows : (c->rows < b->niter ? c->rows : b->niter);
    if (b->niter < r) return false;
    if (r == 0) {
        /* no row dims: only fuse when every op is rank 0 */
        for (int i = c->first; i < c->first + c->nops; i++)
            if (c->g->ops[i].nvars) return false;
        if (b->nvars) return false;
    }
    if (!same_leading_box(&c->g->ops[c->first], b, r)) return false;
    for (int i = 1; i < b->noperands; i++) {
        const graph_operand *o = &b->operands[i];
        if (!written_in_cur(c, o->tensor)) continue;
        if (!plain_distinct(o) || !row_compatible(o, r) || !ranges_match_writers(c, b, o))
            return false;
    }
    if (!writes_safe(c, b, r)) return false;
    *rows = r;
    return true;
}

/* b consumes (RAW) or rewrites (WAW) something the group wrote:
 * independent ops are not fused side by side. */
static bool depends_on_cur(const cur *c, const graph_op *b)
{
    for (int i = c->in_first[b->index]; i < c->in_first[b->index + 1]; i++) {
        const graph_edge *e = &c->g->edges[i];
        if (e->to == b->index && e->dep != GRAPH_DEP_WAR && in_cur(c, e->from)) return true;
    }
    return false;
}

static bool can_join(const cur *c, const graph_op *b, int *rows)
{
    if (c->nops == 0 || c->nops >= GRAPH_MAX_GROUP_OPS || !depends_on_cur(c, b)) return false;
    if (b->nvars > 64) return false;
    for (int i = c->first; i < c->first + c->nops; i++)
        if (c->g->ops[i].nvars > 64) return false;
    if (c->contraction >= 0) {
        *rows = c->rows;
        return join_epilogue(c, b);
    }
    if (b->contraction) {
        if (c->reduces) return false;
        *rows = b->niter;
        return join_contraction(c, b);
    }
    return join_rows(c, b, rows);
}

/* ---- classification ------------------------------------------------------------------ */

static void vars_list(strbuf *sb, const graph_op *op, uint64_t m)
{
    bool first = true;
    sb_putc(sb, '(');
    for (int v = 0; v < op->nvars && v < 64; v++) {
        if (!(m >> v & 1)) continue;
        sb_printf(sb, "%s%s", first ? "" : ",", op->stmt->vars[v].name);
        first = false;
    }
    sb_putc(sb, ')');
}

static const char *contraction_reason(tsl_arena *a, const graph *g, const graph_group *gr)
{
    const graph_op *op = &g->ops[gr->anchor];
    int reads[2], n = 0;
    for (int k = 1; k < op->noperands && n < 2; k++)
        if (op->operands[k].tensor != op->operands[0].tensor) reads[n++] = k;
    if (n < 2) return "contraction"; /* fewer than two other tensors read (difftest seed 51116201314158) */
    const graph_operand *x = &op->operands[reads[0]], *y = &op->operands[reads[1]];
    uint64_t par = 0, red = 0;
    for (int v = 0; v < op->nvars; v++) {
        if (v < op->niter) par |= (uint64_t)1 << v;
        else red |= (uint64_t)1 << v;
    }
    uint64_t batch = par & x->vars & y->vars;
    bool window = false;
    for (int k = 0; k < x->rank; k++) window = window || x->idx[k].var < 0;
    for (int k = 0; k < y->rank; k++) window = window || y->idx[k].var < 0;
    strbuf sb = {0};
    sb_puts(&sb, batch ? "batched GEMM" : "GEMM");
    sb_puts(&sb, " M=");
    vars_list(&sb, op, par & x->vars & ~batch);
    sb_puts(&sb, " N=");
    vars_list(&sb, op, par & y->vars & ~batch);
    sb_puts(&sb, " K=");
    vars_list(&sb, op, red);
    if (batch) {
        sb_puts(&sb, " batch=");
        vars_list(&sb, op, batch);
    }
    if (window) sb_puts(&sb, ", implicit GEMM (window indices)");
    int before = gr->anchor - gr->first, after = gr->first + gr->nops - 1 - gr->anchor;
    if (before) sb_printf(&sb, ", %d init/prologue op%s", before, before > 1 ? "s" : "");
    if (after) sb_printf(&sb, ", %d epilogue op%s", after, after > 1 ? "s" : "");
    const char *s = arena_strdup(a, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* Every read holding a reduction var indexes the row vars first and the
 * reduction vars after, with plain vars (or var-free indices): the
 * reduction runs along the operand's trailing, contiguous dims. Sets *why
 * to the first offending operand otherwise. */
static bool reduction_along_rows(const graph_op *op, const graph_operand **why)
{
    for (int k = 1; k < op->noperands; k++) {
        const graph_operand *o = &op->operands[k];
        bool seen_red = false;
        for (int d = 0; d < o->rank; d++) {
            const graph_index *ix = &o->idx[d];
            bool var_free = ix->kind == GRAPH_IX_AFFINE && ix->var < 0;
            if (var_free)
                for (int v = 0; v < op->nvars; v++) var_free = var_free && ix->coef[v] == 0;
            if (var_free) continue;
            if (ix->var < 0) {
                *why = o;
                return false;
            }
            if (ix->var >= op->niter) seen_red = true;
            else if (seen_red) {
                *why = o;
                return false;
            }
        }
    }
    return true;
}

static const char *attention_reason(tsl_arena *a, const graph *g, const graph_group *gr)
{
    graph_attention at;
    TSL_ASSERT(graph_attention_match(g, gr->first, &at));
    const graph_op *qk = &g->ops[at.qk], *pv = &g->ops[at.pv];
    strbuf sb = {0};
    sb_printf(&sb, "S=%s.%s^T over (%s), %d score op%s, online softmax over (%s), P.%s", g->def->tensors[at.q]->name,
              g->def->tensors[at.k]->name, qk->stmt->vars[at.nb + 2].name, at.nscore, at.nscore == 1 ? "" : "s",
              qk->stmt->vars[at.nb + 1].name, g->def->tensors[at.v]->name);
    sb_printf(&sb, " -> %s(", g->def->tensors[at.o]->name);
    for (int v = 0; v < pv->niter; v++) sb_printf(&sb, "%s%s", v ? "," : "", pv->stmt->vars[v].name);
    sb_putc(&sb, ')');
    if (at.nb) {
        uint64_t m = 0;
        for (int z = 0; z < at.nb; z++) m |= (uint64_t)1 << z;
        sb_puts(&sb, " batch=");
        vars_list(&sb, qk, m);
    }
    const char *s = arena_strdup(a, sb_str(&sb));
    sb_free(&sb);
    return s;
}

static void classify(tsl_arena *a, graph *g, graph_group *gr)
{
    strbuf sb = {0};
    if (gr->strategy == GRAPH_ATTENTION) { /* merge_chains set it */
        gr->anchor = gr->first;
        gr->reason = attention_reason(a, g, gr);
        return;
    }
    if (gr->strategy == GRAPH_GEMM_CHAIN) {
        graph_gemm_chain ch;
        TSL_ASSERT(graph_gemm_chain_match(g, gr->first, &ch));
        gr->anchor = gr->first;
        sb_printf(&sb, "%d GEMMs, hidden", ch.nlayers);
        for (int k = 0; k + 1 < ch.nlayers; k++) sb_printf(&sb, "%s %s", k ? "," : "", g->def->tensors[ch.h[k]]->name);
        sb_printf(&sb, " on chip -> %s", g->def->tensors[ch.h[ch.nlayers - 1]]->name);
        goto done;
    }
    if (gr->strategy == GRAPH_LSTM) {
        graph_lstm L;
        TSL_ASSERT(graph_lstm_match(g, gr->first, &L));
        gr->anchor = gr->first;
        lang_tensor *const *t = g->def->tensors;
        sb_printf(&sb, "LSTM cell: %s = %s.%s^T + %s.%s^T (4 gates), %d gate op%s, %d cell op%s", t[L.gates]->name,
                  t[L.a[0]]->name, t[L.w[0]]->name, t[L.a[1]]->name, t[L.w[1]]->name, L.tail - L.prod[1] - 1,
                  L.tail - L.prod[1] - 1 == 1 ? "" : "s", L.last - L.tail + 1, L.last - L.tail ? "s" : "");
        sb_printf(&sb, ", %s on chip", t[L.gates]->name);
        goto done;
    }
    int last = gr->first + gr->nops;
    gr->anchor = -1;
    for (int i = gr->first; i < last && gr->anchor < 0; i++)
        if (g->ops[i].contraction) gr->anchor = i;
    for (int i = gr->first; i < last && gr->anchor < 0; i++)
        if (!g->ops[i].pointwise) gr->anchor = i;
    bool contraction = gr->anchor >= 0 && g->ops[gr->anchor].contraction;
    if (gr->anchor < 0) gr->anchor = gr->first;

    /* indirect or non-affine indices: no regular access pattern */
    for (int i = gr->first; i < last; i++) {
        const graph_op *op = &g->ops[i];
        for (int k = 1; k < op->noperands; k++) {
            const graph_operand *o = &op->operands[k];
            for (int d = 0; d < o->rank; d++) {
                if (o->idx[d].kind == GRAPH_IX_AFFINE) continue;
                sb_puts(&sb, o->idx[d].kind == GRAPH_IX_INDIRECT ? "gather: " : "non-affine index: ");
                graph_print_operand(&sb, g, op, o);
                sb_printf(&sb, " dim %d is checked at run time", d);
                gr->strategy = GRAPH_GENERIC;
                goto done;
            }
        }
    }
    if (contraction) {
        gr->strategy = GRAPH_CONTRACTION;
        gr->reason = contraction_reason(a, g, gr);
        return;
    }
    int nred = 0;
    for (int i = gr->first; i < last; i++) nred += !g->ops[i].pointwise;
    if (nred == 0) {
        gr->strategy = GRAPH_ELEMENTWISE;
        sb_printf(&sb, "%d pointwise op%s, no reduction", gr->nops, gr->nops > 1 ? "s" : "");
        goto done;
    }
    if (gr->rows == 0) {
        gr->strategy = GRAPH_GENERIC;
        sb_puts(&sb, "full reduction: no row dims to spread over");
        goto done;
    }
    for (int i = gr->first; i < last; i++) {
        const graph_op *op = &g->ops[i];
        const graph_operand *why = NULL;
        if (op->pointwise || reduction_along_rows(op, &why)) continue;
        gr->strategy = GRAPH_GENERIC;
        sb_puts(&sb, "reduction not along trailing dims of ");
        graph_print_operand(&sb, g, op, why);
        if (op->nvars > op->niter && !op->contraction) {
            /* e.g. conv1d's I(i+x): a sliding window is no GEMM either */
            sb_puts(&sb, " (not a contraction: ");
            sb_puts(&sb, op->assign != LANG_ADD_EQ ? "not +=" : "no GEMM shape");
            sb_putc(&sb, ')');
        }
        goto done;
    }
    gr->strategy = GRAPH_ROW_REDUCTION;
    sb_printf(&sb, "%d reduction%s along the rows of %d leading dim%s, %d op%s", nred,
              nred > 1 ? "s" : "", gr->rows, gr->rows > 1 ? "s" : "", gr->nops,
              gr->nops > 1 ? "s" : "");
done:
    gr->reason = arena_strdup(a, sb_str(&sb));
    sb_free(&sb);
}

/* ---- internal temporaries and group interfaces ------------------------------------------- */

bool graph_internal_to(const graph *g, int t, const graph_group *gr)
{
    const graph_tensor *gt = &g->tensors[t];
    if (!gt->internal) return false;
    if (gt->group == gr->index) return true;
    int lo = gr->first, hi = gr->first + gr->nops;
    for (int i = 0; i < gt->nwriters; i++)
        if (gt->writers[i] < lo || gt->writers[i] >= hi) return false;
    for (int i = 0; i < gt->nreaders; i++)
        if (gt->readers[i] < lo || gt->readers[i] >= hi) return false;
    return true;
}

static void mark_tensors(tsl_arena *a, graph *g)
{
    for (int t = 0; t < g->ntensors; t++) {
        graph_tensor *gt = &g->tensors[t];
        if (gt->kind != GRAPH_T_TEMP || !gt->nwriters) continue;
        int grp = g->ops[gt->writers[0]].group;
        bool one = true;
        for (int i = 0; i < gt->nwriters; i++) one = one && g->ops[gt->writers[i]].group == grp;
        for (int i = 0; i < gt->nreaders; i++) one = one && g->ops[gt->readers[i]].group == grp;
        gt->internal = one;
        gt->group = one ? grp : -1;
    }
    /* per group, only the tensors its ops name (in index order) */
    int *stamp = arena_alloc(a, sizeof(int) * (size_t)(g->ntensors + 1)), *ts = NULL, nts = 0, cap = 0;
    /* (a part's tensors: its own interface, the chain's intermediates
     * included, as if it were not merged) */
    for (int gi = 0, part = -1; gi < g->ngroups; part < 0 ? gi++ : 0) {
        /* each group, then each of its parts */
        graph_group *gr = &g->groups[gi];
        if (part >= 0) gr = &gr->parts[part];
        part = part + 1 < g->groups[gi].nparts ? part + 1 : -1;
        int tag = gr->index + 1;
        nts = 0;
        for (int i = gr->first; i < gr->first + gr->nops; i++)
            for (int k = 0; k < g->ops[i].noperands; k++) {
                int t = g->ops[i].operands[k].tensor;
                if (stamp[t] == tag) continue;
                stamp[t] = tag;
                ARENA_PUSH(a, ts, nts, cap, t);
                for (int at = nts - 1; at > 0 && ts[at - 1] > ts[at]; at--) {
                    int x = ts[at];
                    ts[at] = ts[at - 1], ts[at - 1] = x;
                }
            }
        for (int q = 0; q < nts; q++) {
            int t = ts[q];
            const graph_tensor *gt = &g->tensors[t];
            if (graph_internal_to(g, t, gr) || gt->kind == GRAPH_T_SCALAR) continue;
            /* an input when some op reads it (or accumulates into it
             * without `!`) before the group's first write of it */
            int first_w = -1;
            bool in = false, out = false;
            for (int i = gr->first; i < gr->first + gr->nops; i++) {
                const graph_op *op = &g->ops[i];
                bool reads = false;
                for (int k = 1; k < op->noperands; k++) reads = reads || op->operands[k].tensor == t;
                bool writes = op->operands[0].tensor == t;
                if (writes && op->assign != LANG_ASSIGN && !op->bang) reads = true;
                if (reads && first_w < 0) in = true;
                if (writes) {
                    out = true;
                    if (first_w < 0) first_w = i;
                }
            }
            if (in) ARENA_PUSH(a, gr->inputs, gr->ninputs, gr->cap_in, t);
            if (out) ARENA_PUSH(a, gr->outputs, gr->noutputs, gr->cap_out, t);
        }
    }
}

/* Merge the consecutive groups a recognised chain (attention, GEMMs, LSTM)
 * spans into one group (its first op starting a group and its last ending one; anything
 * else keeps the row/contraction grouping). */
static void merge_chains(tsl_arena *a, graph *g)
{
    int out = 0, nparts = 0;
    for (int gi = 0; gi < g->ngroups; gi++) {
        graph_group gr = g->groups[gi];
        graph_attention at;
        graph_gemm_chain ch;
        graph_lstm lc;
        int last = -1, rows = 0;
        graph_strategy st = GRAPH_GENERIC;
        if (g->ops[gr.first].contraction && graph_attention_match(g, gr.first, &at))
            last = at.last, rows = at.nb + 1, st = GRAPH_ATTENTION;
        else if (g->ops[gr.first].contraction && graph_gemm_chain_match(g, gr.first, &ch))
            last = ch.last, rows = 1, st = GRAPH_GEMM_CHAIN;
        else if (g->ops[gr.first].contraction && graph_lstm_match(g, gr.first, &lc))
            last = lc.last, rows = 1, st = GRAPH_LSTM;
        if (last >= 0) {
            int gl = g->ops[last].group;
            if (gl > gi && g->groups[gl].first + g->groups[gl].nops - 1 == last) {
                gr.nops = last - gr.first + 1;
                gr.rows = rows;
                gr.strategy = st;
                gr.nparts = gl - gi + 1;
                gr.parts = arena_alloc(a, sizeof *gr.parts * (size_t)gr.nparts);
                for (int k = 0; k < gr.nparts; k++) {
                    gr.parts[k] = g->groups[gi + k];
                    gr.parts[k].index = g->ngroups + nparts++; /* distinct kernel names */
                }
                gi = gl;
            }
        }
        gr.index = out;
        for (int k = gr.first; k < gr.first + gr.nops; k++) g->ops[k].group = out;
        g->groups[out++] = gr;
    }
    g->ngroups = out;
}

void graph_fuse(tsl_arena *a, graph *g)
{
    /* build.c adds edges op by op: they are sorted by `to` */
    int *in_first = arena_alloc(a, sizeof(int) * (size_t)(g->nops + 2));
    for (int i = 0, j = 0; j <= g->nops; j++) {
        while (i < g->nedges && g->edges[i].to < j) i++;
        in_first[j] = i;
    }
    in_first[g->nops + 1] = g->nedges;
    g->edges_in = in_first;
    cur c = {.g = g, .in_first = in_first, .contraction = -1};
    for (int j = 0; j < g->nops; j++) {
        const graph_op *b = &g->ops[j];
        int rows = 0;
        if (can_join(&c, b, &rows)) {
            c.nops++;
            c.rows = rows;
        } else {
            c.first = j;
            c.nops = 1;
            c.rows = b->niter;
            c.reduces = false;
            c.contraction = -1;
        }
        if (b->contraction) c.contraction = j;
        else if (!b->pointwise) c.reduces = true;
        if (c.nops == 1) {
            graph_group gr = {.index = g->ngroups, .first = j};
            ARENA_PUSH(a, g->groups, g->ngroups, g->cap_groups, gr);
        }
        graph_group *gr = &g->groups[g->ngroups - 1];
        gr->nops = c.nops;
        gr->rows = c.rows;
        g->ops[j].group = gr->index;
    }
    merge_chains(a, g);
    for (int i = 0; i < g->ngroups; i++) {
        classify(a, g, &g->groups[i]);
        for (int k = 0; k < g->groups[i].nparts; k++) classify(a, g, &g->groups[i].parts[k]);
    }
    mark_tensors(a, g);
}
