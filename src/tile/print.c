/* print.c — the tile IR's canonical text. parse.c reads exactly what this
 * writes, so print -> parse -> print is byte-identical. Layout: two spaces
 * per nesting level, one statement per line, one blank line between
 * kernels, operators spaced, parentheses only where precedence needs
 * them. The grammar is in parse.c and docs/tile-ir.md. */
#include <string.h>

#include "tile/tile.h"

static const struct {
    const char *text;
    int prec; /* 0: printed as a call, name(a, b) */
} binops[] = {
#define X(n, t, p) {t, p},
    TILE_BINOPS(X)
#undef X
};

static int expr_prec(const tile_expr *e)
{
    if (e->kind == TILE_E_BIN && binops[e->op].prec > 0) return binops[e->op].prec;
    if (e->kind == TILE_E_NEG || e->kind == TILE_E_NOT) return 10;
    return 11; /* atoms and calls */
}

/* Print e, wrapped in parentheses when it binds looser than `min`. */
static void print_expr_prec(strbuf *sb, const tile_expr *e, int min)
{
    int paren = expr_prec(e) < min;
    if (paren) sb_putc(sb, '(');
    switch (e->kind) {
    case TILE_E_INT: sb_printf(sb, "%lld", (long long)e->i); break;
    case TILE_E_FLOAT: sb_puts(sb, e->ftext ? e->ftext : "0.0"); break;
    case TILE_E_VALUE: sb_puts(sb, e->v ? e->v->name : "?"); break;
    case TILE_E_BLOCK_IDX: sb_printf(sb, "block_idx.%c", "xyz"[e->dim]); break;
    case TILE_E_THREAD_IDX: sb_puts(sb, "thread_idx"); break;
    case TILE_E_NEG:
    case TILE_E_NOT:
        sb_putc(sb, e->kind == TILE_E_NEG ? '-' : '!');
        /* `- -3` would lex back as two minus signs either way; keep a
         * space so it never reads as a single token */
        if (e->a->kind == TILE_E_NEG || (e->a->kind == TILE_E_INT && e->a->i < 0))
            sb_putc(sb, ' ');
        print_expr_prec(sb, e->a, 10);
        break;
    case TILE_E_BIN: {
        int p = binops[e->op].prec;
        if (p == 0) {
            sb_printf(sb, "%s(", binops[e->op].text);
            print_expr_prec(sb, e->a, 0);
            sb_puts(sb, ", ");
            print_expr_prec(sb, e->b, 0);
            sb_putc(sb, ')');
        } else {
            /* left-associative: the right operand needs parens at equal
             * precedence */
            print_expr_prec(sb, e->a, p);
            sb_printf(sb, " %s ", binops[e->op].text);
            print_expr_prec(sb, e->b, p + 1);
        }
        break;
    }
    }
    if (paren) sb_putc(sb, ')');
}

void tile_print_expr(strbuf *sb, const tile_expr *e)
{
    print_expr_prec(sb, e, 0);
}

static void print_exprs(strbuf *sb, tile_expr **es, int n)
{
    for (int i = 0; i < n; i++) {
        if (i) sb_puts(sb, ", ");
        tile_print_expr(sb, es[i]);
    }
}

static void print_dtype(strbuf *sb, tile_dtype dt)
{
    char buf[16];
    sb_puts(sb, tile_dtype_name(dt, buf));
}

void tile_print_type(strbuf *sb, const tile_type *t)
{
    sb_printf(sb, "%s ", tile_space_name(t->space));
    print_dtype(sb, t->dt);
    sb_putc(sb, '[');
    print_exprs(sb, t->dims, t->rank);
    sb_putc(sb, ']');
    if (t->strides) {
        sb_puts(sb, " strides [");
        print_exprs(sb, t->strides, t->rank);
        sb_putc(sb, ']');
    }
    if (t->layout) sb_printf(sb, " layout %s", t->layout->text);
}

static void print_operand(strbuf *sb, const tile_operand *o)
{
    if (!o->v) {
        tile_print_expr(sb, o->scalar);
        return;
    }
    sb_puts(sb, o->v->name);
    for (int i = 0; i < o->nsteps; i++) {
        const tile_step *st = &o->steps[i];
        switch (st->kind) {
        case TILE_STEP_INDEX:
            sb_putc(sb, '[');
            print_exprs(sb, st->idx, st->n);
            sb_putc(sb, ']');
            break;
        case TILE_STEP_TILE:
            sb_puts(sb, ".tile([");
            for (int j = 0; j < st->n; j++) {
                if (j) sb_puts(sb, ", ");
                if (st->tilers && st->tilers[j])
                    sb_puts(sb, st->tilers[j]->text);
                else
                    sb_printf(sb, "%lld", (long long)st->sizes[j]);
            }
            sb_puts(sb, "])");
            break;
        case TILE_STEP_LOCAL: sb_puts(sb, ".local"); break;
        }
    }
}

static void indent(strbuf *sb, int depth)
{
    for (int i = 0; i < depth; i++) sb_puts(sb, "  ");
}

static void print_block(strbuf *sb, const tile_block *b, int depth);

/* Opening brace, the block, and the closing brace at `depth`. */
static void print_braced(strbuf *sb, const tile_block *b, int depth)
{
    sb_puts(sb, "{\n");
    print_block(sb, b, depth + 1);
    indent(sb, depth);
    sb_putc(sb, '}');
}

static void print_instr(strbuf *sb, const tile_instr *in, int depth)
{
    const tile_op_info *info = tile_op_info_of(in->op);
    if (in->result) sb_printf(sb, "%s = ", in->result->name);
    sb_puts(sb, info->name);
    if (in->approx) sb_puts(sb, ".approx");
    int nlead = in->op == TILE_I_SCATTER && in->nargs ? 1 : in->nargs; /* scatter: indices after dst */
    for (int i = 0; i < nlead; i++) {
        sb_puts(sb, i ? ", " : " ");
        print_operand(sb, &in->args[i]);
    }
    if (in->op == TILE_I_ALLOC && in->result) {
        sb_putc(sb, ' ');
        tile_print_type(sb, &in->result->type);
    } else if (in->result && info->res == TILE_RES_TYPE) {
        sb_puts(sb, " -> ");
        tile_print_type(sb, &in->result->type);
    } else if (in->has_dst) {
        sb_puts(sb, " -> ");
        print_operand(sb, &in->dst);
        for (int i = nlead; i < in->nargs; i++) {
            sb_puts(sb, ", ");
            print_operand(sb, &in->args[i]);
        }
    }
    if (in->init) {
        sb_puts(sb, in->op == TILE_I_ALLOC ? " init " : " fill ");
        tile_print_expr(sb, in->init);
    }
    if (in->dim >= 0) sb_printf(sb, " dim %d", in->dim);
    if (in->bytes) sb_printf(sb, " bytes %lld", (long long)in->bytes);
    if (in->atom) sb_printf(sb, " atom %s", in->atom);
    if (in->on) sb_printf(sb, " on %s", in->on->name);
    if (in->mask) sb_printf(sb, " mask %s", in->mask->name);
    if (in->cta) {
        sb_puts(sb, " cta ");
        tile_print_expr(sb, in->cta);
    }
    if (in->mcast) {
        sb_puts(sb, " multicast ");
        tile_print_expr(sb, in->mcast);
    }
    if (in->decomp) {
        sb_puts(sb, " decomp ");
        print_braced(sb, in->decomp, depth);
    }
}

static void print_blockspec(strbuf *sb, const tile_blockspec *bs)
{
    sb_printf(sb, "%s = %s[", bs->view->name, bs->tensor->name);
    for (int i = 0; i < bs->rank; i++) sb_printf(sb, "%s%lld", i ? ", " : "", (long long)bs->block[i]);
    sb_puts(sb, "] at (");
    print_exprs(sb, bs->index, bs->rank);
    sb_printf(sb, ") %s", tile_space_name(bs->space));
    if (bs->layout) sb_printf(sb, " layout %s", bs->layout->text);
}

static void print_pipeline(strbuf *sb, const tile_pipeline *p, int depth)
{
    sb_puts(sb, "pipeline(grid=(");
    for (int i = 0; i < p->ngrid; i++) {
        if (i) sb_puts(sb, ", ");
        sb_printf(sb, "%s: ", p->gridvars[i]->name);
        tile_print_expr(sb, p->grid[i]);
    }
    sb_printf(sb, "), stages=%d, in=[", p->stages);
    for (int i = 0; i < p->nins; i++) {
        if (i) sb_puts(sb, ", ");
        print_blockspec(sb, &p->ins[i]);
    }
    sb_puts(sb, "], out=[");
    for (int i = 0; i < p->nouts; i++) {
        if (i) sb_puts(sb, ", ");
        print_blockspec(sb, &p->outs[i]);
    }
    sb_puts(sb, "]) ");
    print_braced(sb, p->body, depth);
}

static void print_stmt(strbuf *sb, const tile_stmt *s, int depth)
{
    indent(sb, depth);
    switch (s->kind) {
    case TILE_S_INSTR: print_instr(sb, &s->instr, depth); break;
    case TILE_S_LET:
    case TILE_S_VAR:
    case TILE_S_SET:
        sb_printf(sb, "%s %s = ", s->kind == TILE_S_LET ? "let" : s->kind == TILE_S_VAR ? "var" : "set",
                  s->v->name);
        tile_print_expr(sb, s->e);
        break;
    case TILE_S_THREADS: {
        const tile_threads *t = &s->v->threads;
        sb_printf(sb, "%s = threads %d", s->v->name, t->total);
        if (t->tiler)
            sb_printf(sb, " tile %s", t->tiler->text);
        else if (t->inner != t->total)
            sb_printf(sb, " tile %d", t->inner);
        if (t->nouter > 0) {
            sb_puts(sb, " reshape [");
            for (int i = 0; i < t->nouter; i++)
                sb_printf(sb, "%s%lld", i ? ", " : "", (long long)t->outer[i]);
            sb_putc(sb, ']');
        }
        break;
    }
    case TILE_S_INDICES:
        sb_puts(sb, "let ");
        for (int i = 0; i < s->nvs; i++) sb_printf(sb, "%s%s", i ? ", " : "", s->vs[i]->name);
        sb_printf(sb, " = indices %s", s->group->name);
        break;
    case TILE_S_FOR:
        sb_printf(sb, "for %s in ", s->v->name);
        tile_print_expr(sb, s->lo);
        sb_puts(sb, " : ");
        tile_print_expr(sb, s->hi);
        if (s->step) {
            sb_puts(sb, " : ");
            tile_print_expr(sb, s->step);
        }
        if (s->unroll) sb_puts(sb, " unroll");
        sb_putc(sb, ' ');
        print_braced(sb, s->body, depth);
        break;
    case TILE_S_IF:
        sb_puts(sb, "if ");
        tile_print_expr(sb, s->e);
        sb_putc(sb, ' ');
        print_braced(sb, s->body, depth);
        if (s->els) {
            sb_puts(sb, " else ");
            print_braced(sb, s->els, depth);
        }
        break;
    case TILE_S_WHILE:
        sb_puts(sb, "while ");
        tile_print_expr(sb, s->e);
        sb_putc(sb, ' ');
        print_braced(sb, s->body, depth);
        break;
    case TILE_S_PIPELINE: print_pipeline(sb, &s->pipe, depth); break;
    case TILE_S_WARPGROUPS:
        sb_puts(sb, "warpgroups {\n");
        for (int i = 0; i < s->nroles; i++) {
            const tile_role *r = &s->roles[i];
            indent(sb, depth + 1);
            sb_printf(sb, "role %s(%d", r->name, r->count);
            if (r->index) sb_printf(sb, ", %s", r->index->name);
            sb_putc(sb, ')');
            if (r->regs) sb_printf(sb, " regs(%d)", r->regs);
            sb_putc(sb, ' ');
            print_braced(sb, r->body, depth + 1);
            sb_putc(sb, '\n');
        }
        indent(sb, depth);
        sb_putc(sb, '}');
        break;
    }
    sb_putc(sb, '\n');
}

static void print_block(strbuf *sb, const tile_block *b, int depth)
{
    for (int i = 0; i < b->n; i++) print_stmt(sb, b->items[i], depth);
}

void tile_print_kernel(strbuf *sb, const tile_kernel *k)
{
    sb_printf(sb, "kernel %s(", k->name);
    for (int i = 0; i < k->nparams; i++) {
        const tile_value *p = k->params[i];
        if (i) sb_puts(sb, ", ");
        sb_printf(sb, "%s: ", p->name);
        char dn[16];
        if (tile_value_is_typed_scalar(p))
            sb_puts(sb, tile_dtype_name(p->type.dt, dn));
        else if (p->kind == TILE_V_SCALAR)
            sb_puts(sb, "int");
        else
            tile_print_type(sb, &p->type);
    }
    sb_puts(sb, ") grid(");
    print_exprs(sb, (tile_expr **)k->grid, k->ngrid);
    sb_printf(sb, ") threads(%d)", k->threads);
    if (k->smem_budget) sb_printf(sb, " smem_budget(%lld)", (long long)k->smem_budget);
    if (k->min_blocks) sb_printf(sb, " min_blocks(%d)", k->min_blocks);
    if (k->cluster) sb_printf(sb, " cluster(%d)", k->cluster);
    sb_putc(sb, ' ');
    print_braced(sb, k->body, 0);
    sb_putc(sb, '\n');
}

char *tile_print(const tile_module *m)
{
    strbuf sb = {0};
    for (int i = 0; i < m->nkernels; i++) {
        if (i) sb_putc(&sb, '\n');
        tile_print_kernel(&sb, m->kernels[i]);
    }
    if (!sb.buf) sb_puts(&sb, "");
    return sb_take(&sb);
}
