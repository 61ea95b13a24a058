/* quasi.c — quasi-affine index expressions: affine parts combined with
 * division and modulo by positive integer constants (`k / 128`, `k % 128`,
 * `(2*i + kh) / 4 + j`), what a weight's per-group scale `S(k / 128, n)`
 * needs. The language's integer `/` truncates and `%` is C's remainder;
 * for the non-negative values an in-bounds index has they are floor
 * division and modulo.
 *
 * Range inference (ranges.c) takes a constraint from an index `A / c` (A
 * affine, c > 0): the index lies in [0, D) exactly when A does in [0, c*D)
 * (for A >= 0), so A is bounded like an affine index of a dimension c*D.
 * The bounds proof (bind.c) computes the index's interval over the box
 * term by term (quasi_span): exact for one division or modulo of an affine
 * form and for sums of terms in different variables, conservative when
 * terms share a variable (`k - k / 8 * 8` is proven against [-7, k], not
 * [0, 7]: write `k % 8`). A division or modulo by a constant <= 0 inside an
 * index is an error at its divisor (quasi_check). */
#include "lang/lang_int.h"

/* The value of an expression of integer literals only (no variables, no
 * sizes, no reads): `128`, `2 * 64`, `-4`. */
static bool quasi_const(const lang_expr *e, int64_t *out)
{
    int64_t a, b;
    switch (e->kind) {
    case LANG_E_INT: *out = e->ival; return true;
    case LANG_E_UNARY:
        return e->op == LANG_NEG && quasi_const(e->args[0], &a) && !__builtin_mul_overflow(a, -1, out);
    case LANG_E_BINARY:
        if (!quasi_const(e->args[0], &a) || !quasi_const(e->args[1], &b)) return false;
        switch (e->op) {
        case LANG_ADD: return !__builtin_add_overflow(a, b, out);
        case LANG_SUB: return !__builtin_sub_overflow(a, b, out);
        case LANG_MUL: return !__builtin_mul_overflow(a, b, out);
        case LANG_DIV:
        case LANG_MOD:
            if (b <= 0 || (a == INT64_MIN && b == -1)) return false;
            *out = e->op == LANG_DIV ? a / b : a % b;
            return true;
        default: return false;
        }
    default: return false;
    }
}

bool quasi_divisor(const lang_expr *e, int64_t *c)
{
    if (e->kind != LANG_E_BINARY || (e->op != LANG_DIV && e->op != LANG_MOD)) return false;
    return quasi_const(e->args[1], c) && *c > 0;
}

/* A division or modulo by a constant <= 0 anywhere in index expression e. */
static int quasi_check_index(const lang_def *def, const lang_expr *e, tsl_diag *d)
{
    for (int k = 0; k < e->nargs; k++)
        if (quasi_check_index(def, e->args[k], d) < 0) return -1;
    if (e->kind != LANG_E_BINARY || (e->op != LANG_DIV && e->op != LANG_MOD) ||
        dtype_info_of(e->optype)->is_float)
        return 0;
    int64_t c;
    if (!quasi_const(e->args[1], &c) || c > 0) return 0;
    diag_error_at(d, def->src, e->args[1]->offset, TSL_ERR_RANGE,
                  "%s by %lld in an index: an index may divide only by a positive constant (k / 128, k %% 128)",
                  e->op == LANG_DIV ? "division" : "modulo", (long long)c);
    return -1;
}

int quasi_check(const lang_def *def, const lang_expr *e, tsl_diag *d)
{
    if (e->kind == LANG_E_ACCESS) {
        for (int k = 0; k < e->nargs; k++)
            if (quasi_check_index(def, e->args[k], d) < 0) return -1;
        return 0;
    }
    for (int k = 0; k < e->nargs; k++)
        if (quasi_check(def, e->args[k], d) < 0) return -1;
    return 0;
}

bool quasi_is(const lang_expr *e, int nvars)
{
    if (e->type == TSL_DTYPE_BOOL || dtype_info_of(e->type)->is_float) return false;
    int64_t c;
    switch (e->kind) {
    case LANG_E_INT:
    case LANG_E_SIZE: return true;
    case LANG_E_INDEX: return e->slot >= 0 && e->slot < nvars;
    case LANG_E_UNARY: return e->op == LANG_NEG && quasi_is(e->args[0], nvars);
    case LANG_E_BINARY:
        switch (e->op) {
        case LANG_ADD:
        case LANG_SUB: return quasi_is(e->args[0], nvars) && quasi_is(e->args[1], nvars);
        case LANG_MUL:
            return (quasi_const(e->args[0], &c) && quasi_is(e->args[1], nvars)) ||
                   (quasi_const(e->args[1], &c) && quasi_is(e->args[0], nvars));
        case LANG_DIV:
        case LANG_MOD: return quasi_divisor(e, &c) && quasi_is(e->args[0], nvars);
        default: return false;
        }
    default: return false;
    }
}

/* ---- intervals ------------------------------------------------------------------ */

typedef struct quasi_iv {
    int64_t lo, hi;
} quasi_iv;

static int64_t quasi_mod(int64_t x, int64_t c) { return x % c; }

/* [lo, hi] of x % c (C's remainder, the sign of x) for x in [lo, hi]. */
static quasi_iv quasi_mod_iv(quasi_iv x, int64_t c)
{
    quasi_iv r;
    if (x.lo >= 0) {
        if (x.lo / c == x.hi / c) r = (quasi_iv){quasi_mod(x.lo, c), quasi_mod(x.hi, c)};
        else r = (quasi_iv){0, c - 1};
    } else if (x.hi <= 0) {
        if (x.lo / c == x.hi / c) r = (quasi_iv){quasi_mod(x.lo, c), quasi_mod(x.hi, c)};
        else r = (quasi_iv){-(c - 1), 0};
    } else {
        r.lo = x.lo <= -(c - 1) ? -(c - 1) : x.lo;
        r.hi = x.hi >= c - 1 ? c - 1 : x.hi;
    }
    return r;
}

static bool quasi_iv_of(const lang_expr *e, int nvars, const int64_t *lo, const int64_t *hi,
                        const int64_t *sizes, quasi_iv *out)
{
    quasi_iv x, y;
    int64_t c, p, q;
    switch (e->kind) {
    case LANG_E_INT: *out = (quasi_iv){e->ival, e->ival}; return true;
    case LANG_E_SIZE: *out = (quasi_iv){sizes[e->slot], sizes[e->slot]}; return sizes[e->slot] >= 0;
    case LANG_E_INDEX: *out = (quasi_iv){lo[e->slot], hi[e->slot] - 1}; return true;
    case LANG_E_UNARY:
        if (!quasi_iv_of(e->args[0], nvars, lo, hi, sizes, &x) || x.lo == INT64_MIN) return false;
        *out = (quasi_iv){-x.hi, -x.lo};
        return true;
    case LANG_E_BINARY:
        switch (e->op) {
        case LANG_ADD:
        case LANG_SUB:
            if (!quasi_iv_of(e->args[0], nvars, lo, hi, sizes, &x) ||
                !quasi_iv_of(e->args[1], nvars, lo, hi, sizes, &y))
                return false;
            if (e->op == LANG_ADD)
                return !__builtin_add_overflow(x.lo, y.lo, &out->lo) && !__builtin_add_overflow(x.hi, y.hi, &out->hi);
            return !__builtin_sub_overflow(x.lo, y.hi, &out->lo) && !__builtin_sub_overflow(x.hi, y.lo, &out->hi);
        case LANG_MUL: {
            int side = quasi_const(e->args[0], &c) ? 1 : 0;
            if (side == 0 && !quasi_const(e->args[1], &c)) return false;
            if (!quasi_iv_of(e->args[side], nvars, lo, hi, sizes, &x)) return false;
            if (__builtin_mul_overflow(x.lo, c, &p) || __builtin_mul_overflow(x.hi, c, &q)) return false;
            *out = p <= q ? (quasi_iv){p, q} : (quasi_iv){q, p};
            return true;
        }
        case LANG_DIV:
        case LANG_MOD:
            if (!quasi_divisor(e, &c) || !quasi_iv_of(e->args[0], nvars, lo, hi, sizes, &x)) return false;
            /* truncation is monotone, so the ends map to the ends */
            *out = e->op == LANG_DIV ? (quasi_iv){x.lo / c, x.hi / c} : quasi_mod_iv(x, c);
            return true;
        default: return false;
        }
    default: return false;
    }
}

bool quasi_span(const lang_expr *e, int nvars, const int64_t *lo, const int64_t *hi, const int64_t *sizes,
                int64_t *mn, int64_t *mx)
{
    quasi_iv r;
    if (!quasi_iv_of(e, nvars, lo, hi, sizes, &r)) return false;
    *mn = r.lo;
    *mx = r.hi;
    return true;
}
