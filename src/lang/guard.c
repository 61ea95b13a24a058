/* guard.c — what a guard tells about the index variables where a read
 * happens (docs/language.md, sections 6 and 7): `c ? a : b` evaluates a only
 * where c holds and b only where it does not, `a && b` evaluates b only
 * where a holds, `a || b` only where a does not. So
 *
 *     y(n,k,i) +=! (i + kh >= 1 && i + kh <= H ? x(n,c,i + kh - 1) : 0) * w(k,c,kh)
 *     C(i) = i < N ? A(i) : B(i - N)  where i in 0:N+M
 *
 * read x and A, B only at in-bounds indices although the box alone would
 * not prove it.
 *
 * A *fact* is `sum coef[v] * v + off >= 0` (off over sizes and constants);
 * a comparison `a OP b` of two expressions affine in index variables and
 * sizes gives one (two for ==, none for !=; its negation where it fails),
 * `&&` of conditions the facts of both, `!(a || b)` those of !a and !b.
 * A read under facts is GUARDED when some fact concerns one of its index
 * expressions: (a) the fact has one variable, which the index uses (it
 * bounds that variable by sizes and constants), or (b) the fact's
 * variable part is the index's, or its negation (it bounds the index
 * itself). A guarded read is proven in bounds with those facts (bind.c),
 * is no range-inference constraint in the dims they concern (ranges.c),
 * and every target reads it under its guard only (graph: not affine, so
 * masked), never the element the guard excludes. The decision depends on
 * the program's text only, never on the sizes. */
#include <string.h>

#include "lang/lang_int.h"

static void guard_push(tsl_arena *a, lang_facts *f, const int64_t *coef, int nv, const lang_sexpr *off)
{
    lang_fact x;
    x.coef = arena_alloc(a, sizeof(int64_t) * (size_t)(nv + 1));
    memcpy(x.coef, coef, sizeof(int64_t) * (size_t)nv);
    x.off = off;
    ARENA_PUSH(a, f->f, f->n, f->cap, x);
}

/* The facts of c holding (neg = 0) or failing (neg = 1), appended to f. */
static void guard_facts(tsl_arena *a, const lang_expr *c, int nv, int neg, lang_facts *f)
{
    if (c->kind == LANG_E_UNARY && c->op == LANG_NOT) {
        guard_facts(a, c->args[0], nv, !neg, f);
        return;
    }
    if (c->kind != LANG_E_BINARY) return;
    int op = c->op;
    if ((op == LANG_AND && !neg) || (op == LANG_OR && neg)) {
        guard_facts(a, c->args[0], nv, neg, f);
        guard_facts(a, c->args[1], nv, neg, f);
        return;
    }
    if (op < LANG_EQ || op > LANG_GE) return;
    if (dtype_info_of(c->optype)->is_float || c->optype == TSL_DTYPE_BOOL) return;
    int64_t *ca = arena_alloc(a, sizeof(int64_t) * (size_t)(nv + 1));
    int64_t *cb = arena_alloc(a, sizeof(int64_t) * (size_t)(nv + 1));
    const lang_sexpr *oa, *ob;
    if (!ranges_affine(a, c->args[0], nv, ca, &oa) || !ranges_affine(a, c->args[1], nv, cb, &ob)) return;
    if (neg) { /* !(a < b) is a >= b, ... */
        static const int flip[] = {[LANG_EQ] = LANG_NE, [LANG_NE] = LANG_EQ, [LANG_LT] = LANG_GE,
                                   [LANG_LE] = LANG_GT, [LANG_GT] = LANG_LE, [LANG_GE] = LANG_LT};
        op = flip[op];
    }
    if (op == LANG_NE) return;
    int64_t *d = arena_alloc(a, sizeof(int64_t) * (size_t)(nv + 1)); /* a - b */
    for (int v = 0; v < nv; v++) d[v] = ca[v] - cb[v];
    const lang_sexpr *dab = sexpr_bin(a, LANG_SX_SUB, oa, ob), *dba = sexpr_bin(a, LANG_SX_SUB, ob, oa);
    int64_t *nd = arena_alloc(a, sizeof(int64_t) * (size_t)(nv + 1)); /* b - a */
    for (int v = 0; v < nv; v++) nd[v] = -d[v];
    const lang_sexpr *one = sexpr_const(a, 1);
    switch (op) {
    case LANG_LT: guard_push(a, f, nd, nv, sexpr_bin(a, LANG_SX_SUB, dba, one)); break; /* b - a - 1 >= 0 */
    case LANG_LE: guard_push(a, f, nd, nv, dba); break;
    case LANG_GT: guard_push(a, f, d, nv, sexpr_bin(a, LANG_SX_SUB, dab, one)); break;
    case LANG_GE: guard_push(a, f, d, nv, dab); break;
    case LANG_EQ:
        guard_push(a, f, d, nv, dab);
        guard_push(a, f, nd, nv, dba);
        break;
    default: break;
    }
}

int guard_concerns(const lang_fact *f, const int64_t *coef, int nv)
{
    int nf = 0, one = -1;
    bool same = true, opp = true, any = false;
    for (int v = 0; v < nv; v++) {
        if (f->coef[v]) nf++, one = v;
        same = same && f->coef[v] == coef[v];
        opp = opp && f->coef[v] == -coef[v];
        any = any || coef[v];
    }
    if (nf == 0 || !any) return 0;
    if (same) return GUARD_LOWER; /* part + k >= 0 */
    if (opp) return GUARD_UPPER;  /* part <= k */
    if (nf == 1 && coef[one]) /* (a): c u + k >= 0 bounds u from below (c > 0) or above */
        return (f->coef[one] > 0) == (coef[one] > 0) ? GUARD_LOWER : GUARD_UPPER;
    return 0;
}

/* Visit every access of e with the facts that hold where it is evaluated. */
static void guard_visit(tsl_arena *a, lang_expr *e, int nv, lang_facts *f, guard_fn fn, void *ctx)
{
    int base = f->n;
    if (e->kind == LANG_E_SELECT) {
        guard_visit(a, e->args[0], nv, f, fn, ctx);
        guard_facts(a, e->args[0], nv, 0, f);
        guard_visit(a, e->args[1], nv, f, fn, ctx);
        f->n = base;
        guard_facts(a, e->args[0], nv, 1, f);
        guard_visit(a, e->args[2], nv, f, fn, ctx);
        f->n = base;
        return;
    }
    if (e->kind == LANG_E_BINARY && (e->op == LANG_AND || e->op == LANG_OR)) {
        guard_visit(a, e->args[0], nv, f, fn, ctx);
        guard_facts(a, e->args[0], nv, e->op == LANG_OR, f);
        guard_visit(a, e->args[1], nv, f, fn, ctx);
        f->n = base;
        return;
    }
    for (int k = 0; k < e->nargs; k++) guard_visit(a, e->args[k], nv, f, fn, ctx);
    if (e->kind == LANG_E_ACCESS) fn(ctx, e, f);
}

void guard_walk(tsl_arena *a, lang_expr *e, int nvars, guard_fn fn, void *ctx)
{
    lang_facts f = {0};
    guard_visit(a, e, nvars, &f, fn, ctx);
}
