/* ranges.c — range inference (TC paper, section 3.1), per statement.
 *
 * Requires: sema's lang_def (where ranges filled in, other vars lo = 0).
 * Guarantees: every var of every statement has a symbolic [lo, hi), every
 * output and temporary a symbolic shape, and every access argument its
 * `affine` flag.
 *
 * Rules. Index variables start at 0 unless a where clause says otherwise.
 * The constraints are the accesses of the statement whose tensor's shape is
 * known: every RHS access (also those nested in index expressions), and the
 * LHS when its tensor's shape is known (a parameter, or a tensor that some
 * statement already gave a shape: the first one inferred that defines it).
 * Inference runs in rounds; in a round, every affine index expression
 * c*v + R (c a nonzero constant) in which v is the only unresolved variable
 * bounds v so that the index stays in [0, D) for every value of the resolved
 * variables in R:
 *     c > 0:  v <= (D - 1 - max R) / c   so  hi = floor((D - 1 - max R) / c) + 1
 *     c < 0:  v <= min R / -c            so  hi = floor(min R / -c) + 1
 * Several bounds on one variable give their min. Variables bounded in a
 * round become resolved for the next one. No progress with variables left
 * is an error naming the variable and suggesting a where clause. A
 * quasi-affine index A / c (quasi.c) bounds A by [0, c*D) the same way.
 * lo >= 0
 * requirements (min R >= 0) are checked with the concrete sizes by
 * lang_bind, like every affine access.
 */
#include <string.h>

#include "lang/lang_int.h"

#define RANGES_MAX_COEF ((int64_t)1 << 40)

/* ---- affine forms --------------------------------------------------------- */

static bool ranges_aff(tsl_arena *a, const lang_expr *e, int64_t scale, int nvars, int64_t *coef,
                       const lang_sexpr **off);

/* A subexpression without index variables whose value is a known constant. */
static bool ranges_const_of(tsl_arena *a, const lang_expr *e, int nvars, int64_t *value,
                            const lang_sexpr **sym)
{
    int64_t *tmp = arena_alloc(a, sizeof(int64_t) * (size_t)(nvars + 1));
    const lang_sexpr *o = sexpr_const(a, 0);
    if (!ranges_aff(a, e, 1, nvars, tmp, &o)) return false;
    for (int v = 0; v < nvars; v++)
        if (tmp[v]) return false;
    *sym = o;
    if (o->kind == LANG_SX_CONST) *value = o->value;
    return true;
}

/* coef += scale * (variable part of e); off += scale * (rest of e). */
static bool ranges_aff(tsl_arena *a, const lang_expr *e, int64_t scale, int nvars, int64_t *coef,
                       const lang_sexpr **off)
{
    switch (e->kind) {
    case LANG_E_INT: {
        int64_t t;
        if (__builtin_mul_overflow(e->ival, scale, &t)) return false;
        *off = sexpr_bin(a, LANG_SX_ADD, *off, sexpr_const(a, t));
        return true;
    }
    case LANG_E_SIZE:
        *off = sexpr_bin(a, LANG_SX_ADD, *off,
                         sexpr_bin(a, LANG_SX_MUL, sexpr_const(a, scale), sexpr_sym(a, e->slot)));
        return true;
    case LANG_E_INDEX:
        return !__builtin_add_overflow(coef[e->slot], scale, &coef[e->slot]);
    case LANG_E_UNARY: {
        int64_t neg;
        if (e->op != LANG_NEG || __builtin_mul_overflow(scale, -1, &neg)) return false;
        return ranges_aff(a, e->args[0], neg, nvars, coef, off);
    }
    case LANG_E_BINARY:
        if (e->op == LANG_ADD)
            return ranges_aff(a, e->args[0], scale, nvars, coef, off) &&
                   ranges_aff(a, e->args[1], scale, nvars, coef, off);
        if (e->op == LANG_SUB) {
            int64_t neg;
            if (__builtin_mul_overflow(scale, -1, &neg)) return false;
            return ranges_aff(a, e->args[0], scale, nvars, coef, off) &&
                   ranges_aff(a, e->args[1], neg, nvars, coef, off);
        }
        if (e->op == LANG_MUL) {
            for (int side = 0; side < 2; side++) {
                int64_t c = 0, t;
                const lang_sexpr *sym = NULL;
                if (!ranges_const_of(a, e->args[side], nvars, &c, &sym)) continue;
                if (sym->kind == LANG_SX_CONST) {
                    if (__builtin_mul_overflow(scale, c, &t)) return false;
                    return ranges_aff(a, e->args[1 - side], t, nvars, coef, off);
                }
                /* a symbolic factor: only a product of sizes stays affine */
                const lang_sexpr *sym2 = NULL;
                if (!ranges_const_of(a, e->args[1 - side], nvars, &c, &sym2)) return false;
                *off = sexpr_bin(a, LANG_SX_ADD, *off,
                                 sexpr_bin(a, LANG_SX_MUL, sexpr_const(a, scale),
                                           sexpr_bin(a, LANG_SX_MUL, sym, sym2)));
                return true;
            }
        }
        return false;
    default: return false;
    }
}

bool ranges_affine(tsl_arena *a, const lang_expr *e, int nvars, int64_t *coef,
                   const lang_sexpr **off)
{
    memset(coef, 0, sizeof(int64_t) * (size_t)nvars);
    *off = sexpr_const(a, 0);
    if (!e->affine || e->type == TSL_DTYPE_BOOL) return false;
    if (!ranges_aff(a, e, 1, nvars, coef, off)) return false;
    /* keep c*v, c*(hi - 1) and their negations far from overflow */
    for (int v = 0; v < nvars; v++)
        if (coef[v] > RANGES_MAX_COEF || coef[v] < -RANGES_MAX_COEF) return false;
    return true;
}

/* ---- inference --------------------------------------------------------------- */

typedef struct ranges_item {
    const lang_tensor *t;
    int dim;
    const lang_expr *idx; /* NULL for the LHS */
    int64_t *coef;
    const lang_sexpr *off;
    int64_t div;          /* the index is (coef . vars + off) / div: 1 when affine */
    int guard;            /* GUARD_LOWER / GUARD_UPPER: a guard, not the box,
                             keeps the index above 0 / below the extent there */
} ranges_item;

typedef struct ranges_ctx {
    tsl_arena *a;
    lang_def *def;
    lang_stmt *st;
    ranges_item *items;
    int n, cap;
    bool *guard_var; /* nvars: used in an index only a guard keeps in bounds */
} ranges_ctx;

/* One access (guard_walk's callback): marks each argument affine,
 * quasi-affine or neither, the access guarded or not, and takes its affine
 * dims as constraints, each only in the direction no guard protects
 * (`i < N ? A(i) : B(i - N)` must not make i's range N, `i >= 1 ? h(i) : 0`
 * still gives i h's); a quasi-affine `A / c` with A affine is a constraint
 * too: A must lie in [0, c * D). */
static void ranges_access(void *ctx, lang_expr *e, const lang_facts *facts)
{
    ranges_ctx *R = ctx;
    int nv = R->st->nvars;
    e->guarded = false;
    for (int k = 0; k < e->nargs; k++) {
        lang_expr *x = e->args[k];
        ranges_item it = {.t = e->tensor, .dim = k, .idx = x, .div = 1};
        it.coef = arena_alloc(R->a, sizeof(int64_t) * (size_t)(nv + 1));
        x->affine = ranges_affine(R->a, x, nv, it.coef, &it.off);
        x->quasi = !x->affine && quasi_is(x, nv);
        int64_t c;
        if (x->quasi && x->op == LANG_DIV && quasi_divisor(x, &c) && ranges_affine(R->a, x->args[0], nv, it.coef, &it.off))
            it.div = c;
        for (int f = 0; x->affine && f < facts->n; f++) it.guard |= guard_concerns(&facts->f[f], it.coef, nv);
        e->guarded = e->guarded || it.guard;
        if ((x->affine || it.div > 1) && e->tensor->shape) ARENA_PUSH(R->a, R->items, R->n, R->cap, it);
    }
}

/* Every access in e (nested ones too). */
static void ranges_collect(ranges_ctx *R, lang_expr *e)
{
    guard_walk(R->a, e, R->st->nvars, ranges_access, R);
}

/* lo/hi of the sum of terms c*u over resolved u, plus off. */
static void ranges_bounds_of(ranges_ctx *R, const ranges_item *it, int skip,
                             const lang_sexpr **rmin, const lang_sexpr **rmax)
{
    tsl_arena *a = R->a;
    const lang_sexpr *mn = it->off, *mx = it->off;
    for (int u = 0; u < R->st->nvars; u++) {
        int64_t c = it->coef[u];
        if (u == skip || c == 0) continue;
        const lang_range *r = &R->st->vars[u].range;
        const lang_sexpr *last = sexpr_bin(a, LANG_SX_SUB, r->hi, sexpr_const(a, 1));
        const lang_sexpr *cl = sexpr_bin(a, LANG_SX_MUL, sexpr_const(a, c), r->lo);
        const lang_sexpr *ch = sexpr_bin(a, LANG_SX_MUL, sexpr_const(a, c), last);
        mn = sexpr_bin(a, LANG_SX_ADD, mn, c > 0 ? cl : ch);
        mx = sexpr_bin(a, LANG_SX_ADD, mx, c > 0 ? ch : cl);
    }
    *rmin = mn;
    *rmax = mx;
}

/* 0: inferred; 1: variables left (reported when `report`, else retried);
 * -1: an error that retrying cannot fix (reported). */
static int ranges_stmt(ranges_ctx *R, tsl_diag *d, bool report)
{
    tsl_arena *a = R->a;
    lang_stmt *st = R->st;
    lang_tensor *lhs = st->lhs;
    int nv = st->nvars;
    R->n = 0;
    if (quasi_check(R->def, st->rhs, d) < 0) return -1;
    R->guard_var = arena_alloc(a, sizeof(bool) * (size_t)(nv + 1));
    ranges_collect(R, st->rhs);
    bool lhs_known = lhs->shape != NULL;
    if (lhs_known) {
        for (int k = 0; k < st->niter; k++) {
            ranges_item it = {.t = lhs, .dim = k};
            it.coef = arena_alloc(a, sizeof(int64_t) * (size_t)(nv + 1));
            it.coef[k] = 1;
            it.off = sexpr_const(a, 0);
            ARENA_PUSH(a, R->items, R->n, R->cap, it);
        }
    }
    bool *resolved = arena_alloc(a, sizeof(bool) * (size_t)(nv + 1));
    const lang_sexpr **cand = arena_alloc(a, sizeof(lang_sexpr *) * (size_t)(nv + 1));
    int left = 0;
    for (int v = 0; v < nv; v++) {
        resolved[v] = st->vars[v].from_where;
        left += !resolved[v];
    }
    while (left > 0) {
        memset(cand, 0, sizeof(lang_sexpr *) * (size_t)nv);
        for (int i = 0; i < R->n; i++) {
            const ranges_item *it = &R->items[i];
            int v = -1, nun = 0;
            for (int u = 0; u < nv; u++)
                if (it->coef[u] && !resolved[u]) {
                    v = u;
                    nun++;
                }
            if (nun != 1) continue;
            const lang_sexpr *rmin, *rmax, *hi;
            int64_t c = it->coef[v];
            /* c > 0 bounds v by index <= D - 1, c < 0 by index >= 0: not where a guard keeps it so */
            if (it->guard & (c > 0 ? GUARD_UPPER : GUARD_LOWER)) {
                R->guard_var[v] = true;
                continue;
            }
            ranges_bounds_of(R, it, v, &rmin, &rmax);
            const lang_sexpr *D = it->t->shape[it->dim];
            if (it->div > 1) D = sexpr_bin(a, LANG_SX_MUL, sexpr_const(a, it->div), D);
            if (c > 0) {
                /* floor((D - 1 - max R) / c) + 1 */
                const lang_sexpr *num = sexpr_bin(a, LANG_SX_SUB, sexpr_bin(a, LANG_SX_SUB, D, sexpr_const(a, 1)), rmax);
                hi = sexpr_bin(a, LANG_SX_ADD, sexpr_bin(a, LANG_SX_FLOORDIV, num, sexpr_const(a, c)),
                               sexpr_const(a, 1));
            } else {
                /* floor(min R / -c) + 1 */
                hi = sexpr_bin(a, LANG_SX_ADD, sexpr_bin(a, LANG_SX_FLOORDIV, rmin, sexpr_const(a, -c)),
                               sexpr_const(a, 1));
            }
            cand[v] = cand[v] ? sexpr_bin(a, LANG_SX_MIN, cand[v], hi) : hi;
        }
        int progress = 0;
        for (int v = 0; v < nv; v++)
            if (cand[v] && cand[v]->nodes > LANG_MAX_RANGE_NODES) {
                /* chains of variables can make the symbolic form explode */
                diag_error_at(d, R->def->src, st->vars[v].offset, TSL_ERR_RANGE,
                              "the range of '%s' is too complex to infer symbolically; add "
                              "'where %s in 0:<hi>'",
                              st->vars[v].name, st->vars[v].name);
                return -1;
            }
        for (int v = 0; v < nv; v++)
            if (cand[v]) {
                st->vars[v].range.hi = cand[v];
                resolved[v] = true;
                progress++;
            }
        left -= progress;
        if (progress == 0) break;
    }
    for (int v = 0; v < nv && left > 0; v++) {
        if (resolved[v]) continue;
        if (!report) return 1;
        const lang_var *var = &st->vars[v];
        /* is it in some affine index together with other unresolved vars? */
        strbuf others = {0};
        for (int i = 0; i < R->n && !others.len; i++) {
            if (!R->items[i].coef[v]) continue;
            for (int u = 0; u < nv; u++)
                if (u != v && R->items[i].coef[u] && !resolved[u])
                    sb_printf(&others, "%s'%s'", others.len ? ", " : "", st->vars[u].name);
        }
        if (others.len)
            diag_error_at(d, R->def->src, var->offset, TSL_ERR_RANGE,
                          "cannot infer the range of '%s': every index that uses it also uses "
                          "unresolved %s (ambiguous); add 'where %s in 0:<hi>'",
                          var->name, sb_str(&others), var->name);
        else
            diag_error_at(d, R->def->src, var->offset, TSL_ERR_RANGE,
                          "cannot infer the range of '%s': it is not used in an affine index of "
                          "a tensor whose shape is known%s; add 'where %s in 0:<hi>'",
                          var->name,
                          R->guard_var[v] ? " (the reads behind a guard on it do not bound it)" : "",
                          var->name);
        sb_free(&others);
        return 1;
    }
    /* the first definition gives the LHS tensor its shape */
    if (!lhs_known) {
        lhs->shape = arena_alloc(a, sizeof(lang_sexpr *) * (size_t)(lhs->rank + 1));
        for (int k = 0; k < lhs->rank; k++) lhs->shape[k] = st->vars[k].range.hi;
    }
    return 0;
}

/* Statements are inferred in order, repeatedly: a statement that cannot be
 * inferred yet may succeed once a later statement has given a tensor it
 * reads or writes its shape (`out(b,o) = bias(o)` followed by
 * `out(b,o) += in(b,i) * w(o,i)`). No progress in a whole pass is an error,
 * reported for the first statement left. */
int ranges_infer(tsl_arena *a, lang_def *def, tsl_diag *d)
{
    ranges_ctx R = {.a = a, .def = def};
    bool *done = arena_alloc(a, sizeof(bool) * (size_t)(def->nstmts + 1));
    int left = def->nstmts;
    while (left > 0) {
        int progress = 0;
        for (int s = 0; s < def->nstmts; s++) {
            if (done[s]) continue;
            R.st = &def->stmts[s];
            int r = ranges_stmt(&R, d, false);
            if (r < 0) return -1;
            if (r == 0) {
                done[s] = true;
                progress++;
            }
        }
        left -= progress;
        if (left > 0 && progress == 0) {
            for (int s = 0; s < def->nstmts; s++)
                if (!done[s]) {
                    R.st = &def->stmts[s];
                    ranges_stmt(&R, d, true);
                    return -1;
                }
        }
    }
    /* a range empty whatever the sizes (constant dims, as in float(3) I
     * convolved with float(5) K) is reported now, not at the first run */
    for (int s = 0; s < def->nstmts; s++) {
        const lang_stmt *st = &def->stmts[s];
        for (int v = 0; v < st->nvars; v++) {
            const lang_range *r = &st->vars[v].range;
            if (st->vars[v].from_where || !r->lo || !r->hi || r->lo->kind != LANG_SX_CONST ||
                r->hi->kind != LANG_SX_CONST || r->hi->value > r->lo->value)
                continue;
            diag_error_at(d, def->src, st->vars[v].offset, TSL_ERR_RANGE,
                          "empty range for '%s': it is [%lld, %lld) for any sizes (the inputs' constant "
                          "dims are too small)",
                          st->vars[v].name, (long long)r->lo->value, (long long)r->hi->value);
            return -1;
        }
    }
    return 0;
}
