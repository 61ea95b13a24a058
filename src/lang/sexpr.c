/* sexpr.c — symbolic sizes: small expression trees over size symbols and
 * integer constants, folded as they are built so that printed ranges read
 * like a person would write them (`M - N + 1`, not `(M - 1 - (N - 1)) + 1`).
 * Sums are kept in a linear normal form: terms coef*atom in first-seen
 * order, positive ones first, the constant last. Any overflow while folding
 * leaves the node unfolded; lang_sexpr_eval then reports it.
 */
#include <string.h>

#include "lang/lang_int.h"

#define SEXPR_NODES_SATURATE (1 << 30)

static lang_sexpr *sexpr_raw(tsl_arena *a, lang_sexpr_kind k, const lang_sexpr *x,
                             const lang_sexpr *y)
{
    lang_sexpr *e = arena_alloc(a, sizeof *e);
    e->kind = k;
    e->a = x;
    e->b = y;
    int64_t n = 1 + (x ? x->nodes : 0) + (y ? y->nodes : 0);
    e->nodes = n > SEXPR_NODES_SATURATE ? SEXPR_NODES_SATURATE : (int)n;
    return e;
}

const lang_sexpr *sexpr_const(tsl_arena *a, int64_t v)
{
    lang_sexpr *e = sexpr_raw(a, LANG_SX_CONST, NULL, NULL);
    e->value = v;
    return e;
}

const lang_sexpr *sexpr_sym(tsl_arena *a, int slot)
{
    lang_sexpr *e = sexpr_raw(a, LANG_SX_SYM, NULL, NULL);
    e->sym = slot;
    return e;
}

bool sexpr_equal(const lang_sexpr *x, const lang_sexpr *y)
{
    if (x == y) return true;
    if (!x || !y || x->kind != y->kind) return false;
    switch (x->kind) {
    case LANG_SX_CONST: return x->value == y->value;
    case LANG_SX_SYM: return x->sym == y->sym;
    default: return sexpr_equal(x->a, y->a) && sexpr_equal(x->b, y->b);
    }
}

/* ---- linear normal form ------------------------------------------------------ */

#define SEXPR_MAX_TERMS 32

typedef struct sexpr_lin {
    int64_t c;
    int n;
    int64_t coef[SEXPR_MAX_TERMS];
    const lang_sexpr *atom[SEXPR_MAX_TERMS];
} sexpr_lin;

/* Add scale * e to l; false on overflow or too many terms. */
static bool sexpr_lin_add(sexpr_lin *l, const lang_sexpr *e, int64_t scale)
{
    int64_t t;
    switch (e->kind) {
    case LANG_SX_CONST:
        if (__builtin_mul_overflow(e->value, scale, &t)) return false;
        return !__builtin_add_overflow(l->c, t, &l->c);
    case LANG_SX_ADD: return sexpr_lin_add(l, e->a, scale) && sexpr_lin_add(l, e->b, scale);
    case LANG_SX_SUB: {
        int64_t neg;
        if (__builtin_mul_overflow(scale, -1, &neg)) return false;
        return sexpr_lin_add(l, e->a, scale) && sexpr_lin_add(l, e->b, neg);
    }
    case LANG_SX_MUL:
        if (e->a->kind == LANG_SX_CONST) {
            if (__builtin_mul_overflow(scale, e->a->value, &t)) return false;
            return sexpr_lin_add(l, e->b, t);
        }
        if (e->b->kind == LANG_SX_CONST) {
            if (__builtin_mul_overflow(scale, e->b->value, &t)) return false;
            return sexpr_lin_add(l, e->a, t);
        }
        break;
    default: break;
    }
    /* INT64_MIN has no negation; the builder negates coefficients */
    if (scale == INT64_MIN || l->c == INT64_MIN) return false;
    for (int i = 0; i < l->n; i++)
        if (sexpr_equal(l->atom[i], e))
            return !__builtin_add_overflow(l->coef[i], scale, &l->coef[i]) &&
                   l->coef[i] != INT64_MIN;
    if (l->n == SEXPR_MAX_TERMS) return false;
    l->coef[l->n] = scale;
    l->atom[l->n++] = e;
    return true;
}

static const lang_sexpr *sexpr_term(tsl_arena *a, int64_t coef, const lang_sexpr *atom)
{
    if (coef == 1) return atom;
    return sexpr_raw(a, LANG_SX_MUL, sexpr_const(a, coef), atom);
}

static const lang_sexpr *sexpr_lin_build(tsl_arena *a, const sexpr_lin *l)
{
    const lang_sexpr *r = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < l->n; i++) {
            int64_t c = l->coef[i];
            if (c == 0 || (pass == 0) != (c > 0)) continue;
            if (!r) {
                r = c > 0 ? sexpr_term(a, c, l->atom[i])
                          : sexpr_raw(a, LANG_SX_SUB, sexpr_const(a, 0), sexpr_term(a, -c, l->atom[i]));
            } else if (c > 0) {
                r = sexpr_raw(a, LANG_SX_ADD, r, sexpr_term(a, c, l->atom[i]));
            } else {
                r = sexpr_raw(a, LANG_SX_SUB, r, sexpr_term(a, -c, l->atom[i]));
            }
        }
    }
    if (!r) return sexpr_const(a, l->c);
    if (l->c > 0) return sexpr_raw(a, LANG_SX_ADD, r, sexpr_const(a, l->c));
    if (l->c < 0 && l->c != INT64_MIN) return sexpr_raw(a, LANG_SX_SUB, r, sexpr_const(a, -l->c));
    if (l->c < 0) return sexpr_raw(a, LANG_SX_ADD, r, sexpr_const(a, l->c));
    return r;
}

static int64_t sexpr_floordiv(int64_t x, int64_t y)
{
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
    return q;
}

const lang_sexpr *sexpr_bin(tsl_arena *a, lang_sexpr_kind k, const lang_sexpr *x,
                            const lang_sexpr *y)
{
    bool cx = x->kind == LANG_SX_CONST, cy = y->kind == LANG_SX_CONST;
    switch (k) {
    case LANG_SX_ADD:
    case LANG_SX_SUB:
    case LANG_SX_MUL: {
        if (k == LANG_SX_MUL && !cx && !cy) break;
        sexpr_lin l = {0};
        if (!sexpr_lin_add(&l, sexpr_raw(a, k, x, y), 1)) break;
        return sexpr_lin_build(a, &l);
    }
    case LANG_SX_FLOORDIV:
        if (cy && y->value == 1) return x;
        if (cx && cy && y->value != 0 && !(x->value == INT64_MIN && y->value == -1))
            return sexpr_const(a, sexpr_floordiv(x->value, y->value));
        break;
    case LANG_SX_MIN:
    case LANG_SX_MAX: {
        if (sexpr_equal(x, y)) return x;
        /* decide when the difference is a constant */
        sexpr_lin l = {0};
        if (sexpr_lin_add(&l, x, 1) && sexpr_lin_add(&l, y, -1)) {
            bool is_const = true;
            for (int i = 0; i < l.n; i++) is_const = is_const && l.coef[i] == 0;
            if (is_const) return (l.c <= 0) == (k == LANG_SX_MIN) ? x : y;
        }
        break;
    }
    default: break;
    }
    return sexpr_raw(a, k, x, y);
}

int lang_sexpr_eval(const lang_sexpr *e, const int64_t *sizes, int64_t *out)
{
    int64_t x, y;
    switch (e->kind) {
    case LANG_SX_CONST: *out = e->value; return 0;
    case LANG_SX_SYM:
        if (!sizes || sizes[e->sym] < 0) return -1;
        *out = sizes[e->sym];
        return 0;
    default: break;
    }
    if (lang_sexpr_eval(e->a, sizes, &x) < 0 || lang_sexpr_eval(e->b, sizes, &y) < 0) return -1;
    switch (e->kind) {
    case LANG_SX_ADD: return __builtin_add_overflow(x, y, out) ? -1 : 0;
    case LANG_SX_SUB: return __builtin_sub_overflow(x, y, out) ? -1 : 0;
    case LANG_SX_MUL: return __builtin_mul_overflow(x, y, out) ? -1 : 0;
    case LANG_SX_FLOORDIV:
        if (y == 0 || (x == INT64_MIN && y == -1)) return -1;
        *out = sexpr_floordiv(x, y);
        return 0;
    case LANG_SX_MIN: *out = x < y ? x : y; return 0;
    case LANG_SX_MAX: *out = x > y ? x : y; return 0;
    default: break;
    }
    TSL_ASSERT(0);
    return -1;
}
