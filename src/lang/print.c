/* print.c — the checked program as text: canonical TC (`--emit=ast`), the
 * inferred ranges and shapes (`--emit=ranges`), and the pieces diagnostics
 * quote (symbolic sizes, expressions). Parentheses only where precedence
 * needs them. Recursion follows trees whose depth the parser capped. */
#include <string.h>

#include "lang/lang_int.h"

/* ---- symbolic sizes ------------------------------------------------------- */

static int print_sx_prec(const lang_sexpr *e)
{
    switch (e->kind) {
    case LANG_SX_ADD:
    case LANG_SX_SUB: return 1;
    case LANG_SX_MUL:
    case LANG_SX_FLOORDIV: return 2;
    case LANG_SX_CONST: return e->value < 0 ? 0 : 3;
    default: return 3;
    }
}

static void print_sx(strbuf *b, const lang_def *d, const lang_sexpr *e, int min_prec)
{
    int p = print_sx_prec(e);
    bool paren = p < min_prec;
    if (paren) sb_putc(b, '(');
    switch (e->kind) {
    case LANG_SX_CONST: sb_printf(b, "%lld", (long long)e->value); break;
    case LANG_SX_SYM:
        if (d && e->sym >= 0 && e->sym < d->nsizes)
            sb_puts(b, d->sizes[e->sym]);
        else
            sb_printf(b, "$%d", e->sym);
        break;
    case LANG_SX_MIN:
    case LANG_SX_MAX:
        sb_puts(b, e->kind == LANG_SX_MIN ? "min(" : "max(");
        print_sx(b, d, e->a, 0);
        sb_puts(b, ", ");
        print_sx(b, d, e->b, 0);
        sb_putc(b, ')');
        break;
    default: {
        static const char *ops[] = {[LANG_SX_ADD] = " + ", [LANG_SX_SUB] = " - ",
                                    [LANG_SX_MUL] = "*", [LANG_SX_FLOORDIV] = " / "};
        print_sx(b, d, e->a, p);
        sb_puts(b, ops[e->kind]);
        print_sx(b, d, e->b, p + 1);
        break;
    }
    }
    if (paren) sb_putc(b, ')');
}

void lang_print_sexpr(strbuf *b, const lang_def *d, const lang_sexpr *e)
{
    if (!e) {
        sb_puts(b, "?");
        return;
    }
    print_sx(b, d, e, 0);
}

/* ---- expressions ---------------------------------------------------------- */

static const int print_binop_prec[] = {
#define X(n, s, p) p,
    LANG_BINOPS(X)
#undef X
};

static int print_expr_prec(const lang_expr *e)
{
    switch (e->kind) {
    case LANG_E_SELECT: return 0;
    case LANG_E_BINARY: return print_binop_prec[e->op];
    case LANG_E_UNARY: return 7;
    case LANG_E_INT: return e->ival < 0 ? 7 : 8;
    case LANG_E_FLOAT: return e->fval < 0 ? 7 : 8;
    default: return 8;
    }
}

static void print_float(strbuf *b, double v)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.9g", v);
    if ((double)strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
    sb_puts(b, buf);
    if (!strpbrk(buf, ".eEni")) sb_puts(b, ".0");
}

static void print_args(strbuf *b, const lang_def *d, const lang_stmt *s, const lang_expr *e);

static void print_expr(strbuf *b, const lang_def *d, const lang_stmt *s, const lang_expr *e,
                       int min_prec)
{
    int p = print_expr_prec(e);
    bool paren = p < min_prec;
    if (paren) sb_putc(b, '(');
    switch (e->kind) {
    case LANG_E_INT: sb_printf(b, "%lld", (long long)e->ival); break;
    case LANG_E_FLOAT: print_float(b, e->fval); break;
    case LANG_E_INDEX:
        if (s && e->slot < s->nvars)
            sb_puts(b, s->vars[e->slot].name);
        else
            sb_printf(b, "$i%d", e->slot);
        break;
    case LANG_E_SIZE:
        if (d && e->slot < d->nsizes)
            sb_puts(b, d->sizes[e->slot]);
        else
            sb_printf(b, "$s%d", e->slot);
        break;
    case LANG_E_SCALAR: sb_puts(b, e->tensor->name); break;
    case LANG_E_ACCESS:
        sb_puts(b, e->tensor->name);
        print_args(b, d, s, e);
        break;
    case LANG_E_CALL:
        sb_puts(b, lang_builtin_name((lang_builtin)e->op));
        print_args(b, d, s, e);
        break;
    case LANG_E_CAST:
        sb_puts(b, dtype_info_of(e->type)->name);
        print_args(b, d, s, e);
        break;
    case LANG_E_UNARY:
        sb_putc(b, e->op == LANG_NEG ? '-' : '!');
        print_expr(b, d, s, e->args[0], 7);
        break;
    case LANG_E_BINARY:
        print_expr(b, d, s, e->args[0], p);
        sb_printf(b, " %s ", lang_binop_name((lang_binop)e->op));
        print_expr(b, d, s, e->args[1], p + 1);
        break;
    case LANG_E_SELECT:
        print_expr(b, d, s, e->args[0], 1);
        sb_puts(b, " ? ");
        print_expr(b, d, s, e->args[1], 0);
        sb_puts(b, " : ");
        print_expr(b, d, s, e->args[2], 0);
        break;
    }
    if (paren) sb_putc(b, ')');
}

static void print_args(strbuf *b, const lang_def *d, const lang_stmt *s, const lang_expr *e)
{
    sb_putc(b, '(');
    for (int k = 0; k < e->nargs; k++) {
        if (k) sb_puts(b, ", ");
        print_expr(b, d, s, e->args[k], 0);
    }
    sb_putc(b, ')');
}

void lang_print_expr(strbuf *b, const lang_def *d, const lang_stmt *s, const lang_expr *e)
{
    print_expr(b, d, s, e, 0);
}

/* ---- defs ----------------------------------------------------------------- */

static void print_type(strbuf *b, const lang_def *d, const lang_tensor *t)
{
    sb_puts(b, dtype_info_of(t->dtype)->name);
    if (t->is_scalar) return;
    sb_putc(b, '(');
    for (int k = 0; k < t->rank; k++) {
        if (k) sb_puts(b, ", ");
        lang_print_sexpr(b, d, t->shape ? t->shape[k] : NULL);
    }
    sb_putc(b, ')');
}

static const char *print_kind(const lang_tensor *t)
{
    if ((t->flags & (LANG_TENSOR_INPUT | LANG_TENSOR_OUTPUT)) ==
        (LANG_TENSOR_INPUT | LANG_TENSOR_OUTPUT))
        return "in/out";
    if (t->flags & LANG_TENSOR_OUTPUT) return "output";
    if (t->flags & LANG_TENSOR_TEMP) return "temporary";
    return t->is_scalar ? "scalar" : "input";
}

static void print_stmt(strbuf *b, const lang_def *d, const lang_stmt *s, bool all_ranges)
{
    sb_puts(b, s->lhs->name);
    sb_putc(b, '(');
    for (int k = 0; k < s->niter; k++) {
        if (k) sb_puts(b, ", ");
        sb_puts(b, s->vars[k].name);
    }
    sb_printf(b, ") %s%s ", lang_assign_name(s->op), s->bang ? "!" : "");
    lang_print_expr(b, d, s, s->rhs);
    bool first = true;
    for (int v = 0; v < s->nvars; v++) {
        if (!all_ranges && !s->vars[v].from_where) continue;
        sb_puts(b, first ? " where " : ", ");
        first = false;
        sb_printf(b, "%s in ", s->vars[v].name);
        lang_print_sexpr(b, d, s->vars[v].range.lo);
        sb_putc(b, ':');
        lang_print_sexpr(b, d, s->vars[v].range.hi);
    }
}

void lang_print_def(strbuf *b, const lang_def *d)
{
    sb_printf(b, "def %s(", d->name);
    for (int i = 0; i < d->nparams; i++) {
        const lang_tensor *t = d->params[i];
        if (i) sb_puts(b, ", ");
        print_type(b, d, t);
        sb_printf(b, " %s", t->name);
    }
    sb_puts(b, ") -> (");
    for (int i = 0; i < d->noutputs; i++) sb_printf(b, "%s%s", i ? ", " : "", d->outputs[i]->name);
    sb_puts(b, ") {\n");
    for (int i = 0; i < d->ntensors; i++) {
        const lang_tensor *t = d->tensors[i];
        if (t->param_index >= 0) continue;
        sb_printf(b, "  # %s: ", t->name);
        print_type(b, d, t);
        sb_printf(b, " %s\n", print_kind(t));
    }
    for (int s = 0; s < d->nstmts; s++) {
        sb_puts(b, "  ");
        print_stmt(b, d, &d->stmts[s], false);
        sb_printf(b, "  # %s\n", dtype_info_of(d->stmts[s].rhs->type)->name);
    }
    sb_puts(b, "}\n");
}

void lang_print_ranges(strbuf *b, const lang_def *d)
{
    sb_printf(b, "def %s\n", d->name);
    sb_puts(b, "  sizes:");
    for (int i = 0; i < d->nsizes; i++) sb_printf(b, " %s", d->sizes[i]);
    sb_putc(b, '\n');
    for (int i = 0; i < d->ntensors; i++) {
        const lang_tensor *t = d->tensors[i];
        sb_printf(b, "  tensor %s: ", t->name);
        print_type(b, d, t);
        sb_printf(b, " %s\n", print_kind(t));
    }
    for (int s = 0; s < d->nstmts; s++) {
        const lang_stmt *st = &d->stmts[s];
        int line, col;
        diag_line_col(d->src, st->offset, &line, &col);
        sb_printf(b, "  stmt %d (line %d): ", s, line);
        print_stmt(b, d, st, false);
        sb_putc(b, '\n');
        for (int v = 0; v < st->nvars; v++) {
            sb_printf(b, "    %s in ", st->vars[v].name);
            lang_print_sexpr(b, d, st->vars[v].range.lo);
            sb_putc(b, ':');
            lang_print_sexpr(b, d, st->vars[v].range.hi);
            sb_printf(b, "%s%s\n", v < st->niter ? "" : "  reduction",
                      st->vars[v].from_where ? "  (where)" : "");
        }
    }
}
