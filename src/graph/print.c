/* print.c — readable text of an op graph (tessel compile --emit=graph):
 * groups with their strategy and reason, each op's box, iterator types,
 * operands with their index maps, body and dependences, then the tensors
 * with their kind and whether they are materialized or internal.
 */
#include <string.h>

#include "graph/graph.h"

static const char *const dep_names[] = {"RAW", "WAW", "WAR"};

static int binop_prec(int op)
{
    static const int prec[] = {
#define X(n, s, p) p,
        LANG_BINOPS(X)
#undef X
    };
    return op >= 0 && op < (int)TSL_COUNTOF(prec) ? prec[op] : 0;
}


/* An expression at the given context precedence (parenthesized when it
 * binds less tightly). */
static void print_expr(strbuf *b, const graph *g, const graph_op *op, const graph_expr *x, int ctx)
{
    const lang_expr *e = x->src;
    switch (x->kind) {
    case LANG_E_INT: sb_printf(b, "%lld", (long long)e->ival); break;
    case LANG_E_FLOAT: sb_printf(b, "%.9g", e->fval); break;
    case LANG_E_INDEX: sb_puts(b, op->stmt->vars[e->slot].name); break;
    case LANG_E_SIZE: sb_puts(b, g->def->sizes[e->slot]); break;
    case LANG_E_SCALAR: sb_puts(b, e->tensor->name); break;
    case LANG_E_ACCESS: graph_print_operand(b, g, op, &op->operands[x->operand]); break;
    case LANG_E_UNARY:
        sb_puts(b, e->op == LANG_NEG ? "-" : "!");
        print_expr(b, g, op, x->args[0], 100);
        break;
    case LANG_E_BINARY: {
        int p = binop_prec(e->op);
        if (p < ctx) sb_putc(b, '(');
        print_expr(b, g, op, x->args[0], p);
        sb_printf(b, " %s ", lang_binop_name((lang_binop)e->op));
        print_expr(b, g, op, x->args[1], p + 1);
        if (p < ctx) sb_putc(b, ')');
        break;
    }
    case LANG_E_SELECT:
        if (ctx > 0) sb_putc(b, '(');
        print_expr(b, g, op, x->args[0], 1);
        sb_puts(b, " ? ");
        print_expr(b, g, op, x->args[1], 1);
        sb_puts(b, " : ");
        print_expr(b, g, op, x->args[2], 1);
        if (ctx > 0) sb_putc(b, ')');
        break;
    case LANG_E_CALL:
    case LANG_E_CAST:
        sb_puts(b, x->kind == LANG_E_CALL ? lang_builtin_name((lang_builtin)e->op)
                                          : dtype_info_of(e->type)->name);
        sb_putc(b, '(');
        for (int i = 0; i < x->nargs; i++) {
            if (i) sb_puts(b, ", ");
            print_expr(b, g, op, x->args[i], 0);
        }
        sb_putc(b, ')');
        break;
    }
}

void graph_print_operand(strbuf *b, const graph *g, const graph_op *op, const graph_operand *o)
{
    sb_printf(b, "%s(", g->tensors[o->tensor].lt->name);
    for (int d = 0; d < o->rank; d++) {
        if (d) sb_putc(b, ',');
        const graph_index *ix = &o->idx[d];
        if (ix->e) print_expr(b, g, op, ix->e, 0);
        else sb_puts(b, op->stmt->vars[ix->var].name); /* the LHS */
    }
    sb_putc(b, ')');
}

/* The canonical form of an affine index: "2*i + kw - 1", "D - 1 - j". */
static void print_affine(strbuf *b, const graph *g, const graph_op *op, const graph_index *ix)
{
    bool any = false;
    for (int t = 0; t < op->nvars + g->def->nsizes; t++) {
        int64_t k = t < op->nvars ? ix->coef[t] : ix->scoef[t - op->nvars];
        const char *name = t < op->nvars ? op->stmt->vars[t].name : g->def->sizes[t - op->nvars];
        if (!k) continue;
        if (any) sb_puts(b, k < 0 ? " - " : " + ");
        else if (k < 0) sb_putc(b, '-');
        int64_t m = k < 0 ? -k : k;
        if (m != 1) sb_printf(b, "%lld*", (long long)m);
        sb_puts(b, name);
        any = true;
    }
    if (ix->c || !any) {
        if (any) sb_printf(b, " %c %lld", ix->c < 0 ? '-' : '+', (long long)(ix->c < 0 ? -ix->c : ix->c));
        else sb_printf(b, "%lld", (long long)ix->c);
    }
}

static void print_sexpr(strbuf *b, const graph *g, const lang_sexpr *e)
{
    int64_t v;
    if (lang_sexpr_eval(e, NULL, &v) == 0) sb_printf(b, "%lld", (long long)v);
    else lang_print_sexpr(b, g->def, e);
}

static void print_op(strbuf *b, const graph *g, const graph_op *op)
{
    const graph_operand *w = &op->operands[0];
    sb_printf(b, "  op %d: ", op->index);
    graph_print_operand(b, g, op, w);
    sb_printf(b, " %s%s ", lang_assign_name(op->assign), op->bang ? "!" : "");
    print_expr(b, g, op, op->body, 0);
    sb_putc(b, '\n');

    sb_puts(b, "    box:");
    for (int v = 0; v < op->nvars; v++) {
        sb_printf(b, "%s %s in [", v ? "," : "", op->stmt->vars[v].name);
        if (op->lo) {
            sb_printf(b, "%lld, %lld)", (long long)op->lo[v], (long long)op->hi[v]);
        } else {
            print_sexpr(b, g, op->box[v].lo);
            sb_puts(b, ", ");
            print_sexpr(b, g, op->box[v].hi);
            sb_putc(b, ')');
        }
        if (op->iters[v] == GRAPH_PARALLEL) sb_puts(b, " parallel");
        else sb_printf(b, " reduction(%s%s)", lang_assign_name(op->assign), op->bang ? "!" : "");
    }
    if (!op->nvars) sb_puts(b, " (scalar)");
    sb_putc(b, '\n');

    for (int k = 0; k < op->noperands; k++) {
        const graph_operand *o = &op->operands[k];
        sb_printf(b, "    %s %%%d = ", o->write ? "write" : "read ", k);
        graph_print_operand(b, g, op, o);
        sb_puts(b, o->identity ? "  identity" : "  map (");
        if (!o->identity) {
            for (int d = 0; d < o->rank; d++) {
                const graph_index *ix = &o->idx[d];
                if (d) sb_puts(b, ", ");
                if (ix->kind == GRAPH_IX_AFFINE) print_affine(b, g, op, ix);
                else sb_puts(b, ix->kind == GRAPH_IX_INDIRECT ? "indirect" : "non-affine");
            }
            sb_putc(b, ')');
        }
        sb_putc(b, '\n');
    }
    if (op->contraction) sb_puts(b, "    contraction\n");

    bool first = true;
    for (int i = g->edges_in[op->index]; i < g->edges_in[op->index + 1]; i++) {
        const graph_edge *e = &g->edges[i];
        sb_printf(b, "%s %s %s from op %d", first ? "    deps:" : ",", dep_names[e->dep],
                  g->tensors[e->tensor].lt->name, e->from);
        first = false;
    }
    if (!first) sb_putc(b, '\n');
}

static void print_names(strbuf *b, const graph *g, const int *ts, int n)
{
    for (int i = 0; i < n; i++) sb_printf(b, "%s%s", i ? ", " : " ", g->tensors[ts[i]].lt->name);
    if (!n) sb_puts(b, " -");
}

void graph_print(strbuf *b, const graph *g)
{
    sb_printf(b, "graph %s: %d op%s in %d group%s\n", g->def->name, g->nops,
              g->nops == 1 ? "" : "s", g->ngroups, g->ngroups == 1 ? "" : "s");
    for (int gi = 0; gi < g->ngroups; gi++) {
        const graph_group *gr = &g->groups[gi];
        sb_printf(b, "group %d: %s (%s)\n", gr->index, graph_strategy_name(gr->strategy), gr->reason);
        sb_printf(b, "  ops %d..%d, %d row dim%s; reads", gr->first, gr->first + gr->nops - 1,
                  gr->rows, gr->rows == 1 ? "" : "s");
        print_names(b, g, gr->inputs, gr->ninputs);
        sb_puts(b, "; writes");
        print_names(b, g, gr->outputs, gr->noutputs);
        sb_putc(b, '\n');
        if (gr->nparts) {
            /* what the scheduler lowers when no plan of the chain takes it */
            sb_puts(b, "  merged from:");
            for (int k = 0; k < gr->nparts; k++)
                sb_printf(b, "%s %s (ops %d..%d)", k ? "," : "", graph_strategy_name(gr->parts[k].strategy),
                          gr->parts[k].first, gr->parts[k].first + gr->parts[k].nops - 1);
            sb_putc(b, '\n');
        }
        for (int i = gr->first; i < gr->first + gr->nops; i++) print_op(b, g, &g->ops[i]);
    }
    static const char *const kinds[] = {"input", "output", "in/out", "temp", "scalar"};
    sb_puts(b, "tensors:\n");
    for (int t = 0; t < g->ntensors; t++) {
        const graph_tensor *gt = &g->tensors[t];
        const lang_tensor *lt = gt->lt;
        sb_printf(b, "  %-8s %s %s", lt->name, dtype_info_of(lt->dtype)->name, kinds[gt->kind]);
        if (lt->rank) {
            sb_puts(b, " (");
            for (int d = 0; d < lt->rank; d++) {
                if (d) sb_puts(b, ", ");
                if (gt->shape) sb_printf(b, "%lld", (long long)gt->shape[d]);
                else if (lt->shape && lt->shape[d]) print_sexpr(b, g, lt->shape[d]);
                else sb_putc(b, '?');
            }
            sb_putc(b, ')');
        }
        if (gt->kind != GRAPH_T_SCALAR) {
            if (gt->internal) sb_printf(b, " internal to group %d", gt->group);
            else if (gt->nwriters || gt->nreaders) sb_puts(b, " materialized");
            else sb_puts(b, " unused");
        }
        sb_putc(b, '\n');
    }
}
