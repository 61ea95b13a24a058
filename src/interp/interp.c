/* interp.c — the reference interpreter (see interp.h).
 *
 * Values: every expression node has a dtype. A float-typed value is held
 * as a double: every elementwise operation (arithmetic, math builtins) on
 * float64 computes in double, on any narrower float in float32 — computed
 * in double and rounded to float32, as the targets compute in float — and
 * a float16/bfloat16/low-bit value is rounded to its dtype where it is
 * stored or explicitly cast (docs/language.md "Arithmetic and
 * conversions" is the one definition). An
 * integer- or bool-typed value is held as an int64 already wrapped to its
 * dtype (uint64 as its bit pattern). Conversions: int->int wraps,
 * float->int truncates toward zero and saturates (NaN -> 0), anything->bool
 * is `!= 0` (NaN -> true). Constants, scalar parameters and tensor elements
 * enter with the value their dtype holds (a float32 literal 0.1 is 0.1f).
 * Reductions accumulate in double (the wider accumulator the language
 * allows) and round when stored.
 * max/min (builtins and `max=`/`min=`) are dtype_max_num/dtype_min_num: a
 * NaN operand is ignored, -0 orders below +0. Indices are always checked
 * against their dimension, affine or not (cheap, and the oracle should not
 * trust the prover).
 *
 * A statement runs in three steps: initialise one accumulator per LHS
 * element of the box (identity for `!`, the current LHS value otherwise),
 * fold the RHS over the reduction box into it, then store every
 * accumulator. Since nothing is stored before every RHS value is read, the
 * RHS always sees the pre-statement tensors. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "interp/interp.h"

typedef struct interp_val {
    double f;  /* float-typed values */
    int64_t i; /* integer- and bool-typed values */
} interp_val;

typedef struct interp_state {
    const lang_bound *b;
    const lang_def *def;
    interp_tensor *t; /* def->ntensors, temporaries allocated; strides in elements */
    int64_t *var;     /* values of the current statement's index variables */
    tsl_diag *d;
} interp_state;

/* ---- dtype helpers -------------------------------------------------------- */

static int is_float(tsl_dtype t) { return dtype_is_float(t); }

/* Wrap v to the width and signedness of integer dtype t, as a C conversion
 * (any width: the low-bit integers too). */
static int64_t wrap_int(tsl_dtype t, int64_t v) { return dtype_int_wrap(t, v); }

/* The smallest and largest value of integer dtype t (U64's max as the bit
 * pattern -1). */
static int64_t int_min(tsl_dtype t) { return dtype_int_min(t); }
static int64_t int_max(tsl_dtype t) { return dtype_int_max(t); }

static double int_to_double(tsl_dtype t, int64_t v)
{
    return t == TSL_DTYPE_U64 ? (double)(uint64_t)v : (double)v;
}

/* Truncate toward zero and saturate to integer dtype t; NaN gives 0 (to
 * bool: `!= 0`, so NaN is true). */
static int64_t float_to_int(tsl_dtype t, double v)
{
    if (t == TSL_DTYPE_BOOL) return v != 0;
    if (v != v) return 0;
    if (t == TSL_DTYPE_U64) {
        if (v < 1) return 0;
        if (v >= 18446744073709551616.0) return -1;
        return (int64_t)(uint64_t)v;
    }
    if (t == TSL_DTYPE_I64) {
        if (v >= 9223372036854775808.0) return INT64_MAX;
        if (v <= -9223372036854775808.0) return INT64_MIN;
        return (int64_t)v;
    }
    double tv = trunc(v);
    if (tv <= (double)int_min(t)) return int_min(t);
    if (tv >= (double)int_max(t)) return int_max(t);
    return (int64_t)tv;
}

/* Round a double to the precision of float dtype t (the low-bit floats
 * through float32, saturating: docs/lowbit.md). */
static double round_float(tsl_dtype t, double v)
{
    return dtype_round(t, v);
}

/* Convert a value of dtype `from` to dtype `to`. Between float dtypes the
 * value is rounded to `to` (exact when `to` is wider: a narrow float's
 * value may carry float32 precision until it is stored or cast). */
static interp_val convert_slow(interp_val v, tsl_dtype from, tsl_dtype to)
{
    interp_val r = {0, 0};
    if (is_float(from)) {
        if (is_float(to))
            r.f = round_float(to, v.f);
        else
            r.i = float_to_int(to, v.f);
    } else {
        if (is_float(to))
            r.f = round_float(to, int_to_double(from, v.i));
        else
            r.i = wrap_int(to, v.i);
    }
    return r;
}

static inline interp_val convert(interp_val v, tsl_dtype from, tsl_dtype to)
{
    return from == to ? v : convert_slow(v, from, to);
}

static int truth(interp_val v, tsl_dtype t) { return is_float(t) ? v.f != 0 : v.i != 0; }

/* The result of one float operation of dtype t, computed in double:
 * float64 keeps it, every narrower float computes in float32. */
static double op_result(tsl_dtype t, double v)
{
    return t == TSL_DTYPE_F64 ? v : (double)(float)v;
}

/* Element e (offset in elements from base; bit e * bits for a packed
 * dtype). Integers exactly (dtype_get goes through double, which cannot
 * hold every int64). */
static interp_val load_elem(tsl_dtype t, const char *base, int64_t e)
{
    interp_val v = {0, 0};
    if (t == TSL_DTYPE_F32) { /* the common case, inline */
        float f;
        memcpy(&f, base + e * 4, 4);
        v.f = f;
    } else if (is_float(t)) {
        v.f = dtype_get(t, base, e);
    } else {
        uint64_t u = dtype_get_bits(t, base, e);
        v.i = t == TSL_DTYPE_BOOL ? u != 0 : wrap_int(t, (int64_t)u);
    }
    return v;
}

static void store_elem(tsl_dtype t, char *base, int64_t e, interp_val v)
{
    if (is_float(t))
        dtype_set(t, base, e, v.f);
    else
        dtype_set_bits(t, base, e, (uint64_t)(t == TSL_DTYPE_BOOL ? v.i != 0 : v.i));
}

/* ---- expressions --------------------------------------------------------- */

static tsl_status eval(interp_state *s, const lang_expr *e, interp_val *out);

static tsl_status runtime_error(interp_state *s, const lang_expr *e, tsl_status st,
                                const char *fmt, const char *what)
{
    diag_error_at(s->d, s->def->src, e->offset, st, fmt, what);
    return st;
}

/* Element offset of tensor(args...) after checking every index against its dim. */
static tsl_status eval_address(interp_state *s, const lang_expr *e, int64_t *addr)
{
    const interp_tensor *t = &s->t[e->tensor->index];
    int64_t off = 0;
    for (int dim = 0; dim < e->nargs; dim++) {
        const lang_expr *a = e->args[dim];
        interp_val v;
        tsl_status st = eval(s, a, &v);
        if (st) return st;
        int64_t idx = is_float(a->type) ? float_to_int(TSL_DTYPE_I64, v.f) : v.i;
        if (a->type == TSL_DTYPE_U64 && idx < 0) idx = INT64_MAX; /* huge unsigned */
        if (idx < 0 || idx >= t->shape[dim]) {
            diag_error_at(s->d, s->def->src, a->offset, TSL_ERR_BOUNDS,
                          "index %lld out of range for dimension %d of '%s' (size %lld)",
                          (long long)idx, dim, e->tensor->name, (long long)t->shape[dim]);
            return TSL_ERR_BOUNDS;
        }
        off += idx * t->stride[dim];
    }
    *addr = off;
    return TSL_OK;
}

/* Integer arithmetic in dtype t on values already of dtype t. */
static tsl_status binary_int(interp_state *s, const lang_expr *e, tsl_dtype t, int64_t a,
                             int64_t b, int64_t *out)
{
    int uns = t == TSL_DTYPE_U64;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch ((lang_binop)e->op) {
    case LANG_ADD: *out = wrap_int(t, (int64_t)(ua + ub)); return TSL_OK;
    case LANG_SUB: *out = wrap_int(t, (int64_t)(ua - ub)); return TSL_OK;
    case LANG_MUL: *out = wrap_int(t, (int64_t)(ua * ub)); return TSL_OK;
    case LANG_DIV:
    case LANG_MOD:
        if (b == 0)
            return runtime_error(s, e, TSL_ERR_RUNTIME, "integer %s by zero",
                                 e->op == LANG_DIV ? "division" : "modulo");
        if (uns)
            *out = (int64_t)(e->op == LANG_DIV ? ua / ub : ua % ub);
        else if (a == INT64_MIN && b == -1) /* the one overflowing case: wrap */
            *out = e->op == LANG_DIV ? INT64_MIN : 0;
        else
            *out = e->op == LANG_DIV ? a / b : a % b;
        *out = wrap_int(t, *out);
        return TSL_OK;
    case LANG_EQ: *out = a == b; return TSL_OK;
    case LANG_NE: *out = a != b; return TSL_OK;
    case LANG_LT: *out = uns ? ua < ub : a < b; return TSL_OK;
    case LANG_LE: *out = uns ? ua <= ub : a <= b; return TSL_OK;
    case LANG_GT: *out = uns ? ua > ub : a > b; return TSL_OK;
    case LANG_GE: *out = uns ? ua >= ub : a >= b; return TSL_OK;
    default: break;
    }
    TSL_ASSERT(0 && "binary_int: bad operator");
}

static double binary_float(lang_binop op, double a, double b)
{
    switch (op) {
    case LANG_ADD: return a + b;
    case LANG_SUB: return a - b;
    case LANG_MUL: return a * b;
    case LANG_DIV: return a / b;
    case LANG_MOD: return fmod(a, b);
    case LANG_EQ: return a == b;
    case LANG_NE: return a != b;
    case LANG_LT: return a < b;
    case LANG_LE: return a <= b;
    case LANG_GT: return a > b;
    case LANG_GE: return a >= b;
    default: break;
    }
    TSL_ASSERT(0 && "binary_float: bad operator");
}

static int is_comparison(lang_binop op) { return op >= LANG_EQ && op <= LANG_GE; }

static tsl_status eval_binary(interp_state *s, const lang_expr *e, interp_val *out)
{
    interp_val a, b;
    tsl_status st;
    lang_binop op = (lang_binop)e->op;
    if ((st = eval(s, e->args[0], &a))) return st;
    if (op == LANG_AND || op == LANG_OR) { /* short-circuit, as in C */
        int ta = truth(a, e->args[0]->type);
        int r;
        if (op == LANG_AND ? !ta : ta) {
            r = ta;
        } else {
            if ((st = eval(s, e->args[1], &b))) return st;
            r = truth(b, e->args[1]->type);
        }
        *out = convert((interp_val){0, r}, TSL_DTYPE_BOOL, e->type);
        return TSL_OK;
    }
    if ((st = eval(s, e->args[1], &b))) return st;
    tsl_dtype ot = e->optype;
    a = convert(a, e->args[0]->type, ot);
    b = convert(b, e->args[1]->type, ot);
    interp_val r = {0, 0};
    tsl_dtype rt = is_comparison(op) ? TSL_DTYPE_BOOL : ot;
    if (is_float(ot)) {
        double v = binary_float(op, a.f, b.f);
        if (is_comparison(op))
            r.i = v != 0;
        else
            r.f = op_result(ot, v);
    } else {
        if ((st = binary_int(s, e, ot, a.i, b.i, &r.i))) return st;
    }
    *out = convert(r, rt, e->type);
    return TSL_OK;
}

static tsl_status eval_call(interp_state *s, const lang_expr *e, interp_val *out)
{
    interp_val a[2] = {{0, 0}, {0, 0}};
    tsl_status st;
    TSL_ASSERT(e->nargs >= 1 && e->nargs <= 2);
    for (int k = 0; k < e->nargs; k++) {
        if ((st = eval(s, e->args[k], &a[k]))) return st;
        a[k] = convert(a[k], e->args[k]->type, e->type);
    }
    lang_builtin fn = (lang_builtin)e->op;
    if (!is_float(e->type) && (fn == LANG_ABS || fn == LANG_MAX || fn == LANG_MIN)) {
        int uns = e->type == TSL_DTYPE_U64;
        uint64_t u0 = (uint64_t)a[0].i, u1 = (uint64_t)a[1].i;
        int64_t r;
        if (fn == LANG_ABS)
            r = wrap_int(e->type, a[0].i < 0 && !uns ? (int64_t)(0 - u0) : a[0].i);
        else if (fn == LANG_MAX)
            r = (uns ? u0 > u1 : a[0].i > a[1].i) ? a[0].i : a[1].i;
        else
            r = (uns ? u0 < u1 : a[0].i < a[1].i) ? a[0].i : a[1].i;
        out->i = r;
        out->f = 0;
        return TSL_OK;
    }
    /* float math in double (integer-typed leftovers: compute, then convert) */
    tsl_dtype ft = is_float(e->type) ? e->type : TSL_DTYPE_F64;
    double x = is_float(e->type) ? a[0].f : int_to_double(e->type, a[0].i);
    double y = is_float(e->type) ? a[1].f : int_to_double(e->type, a[1].i);
    double r;
    switch (fn) {
    case LANG_EXP: r = exp(x); break;
    case LANG_LOG: r = log(x); break;
    case LANG_SQRT: r = sqrt(x); break;
    case LANG_RSQRT: r = 1.0 / sqrt(x); break;
    case LANG_TANH: r = tanh(x); break;
    case LANG_SIGMOID: r = 1.0 / (1.0 + exp(-x)); break;
    case LANG_ERF: r = erf(x); break;
    case LANG_ABS: r = fabs(x); break;
    case LANG_MAX: r = dtype_max_num(x, y); break;
    case LANG_MIN: r = dtype_min_num(x, y); break;
    case LANG_POW: r = pow(x, y); break;
    default: TSL_ASSERT(0 && "eval_call: bad builtin");
    }
    if (is_float(e->type)) r = op_result(e->type, r);
    *out = convert((interp_val){r, 0}, ft, e->type);
    return TSL_OK;
}

/* Evaluate e at the current index-variable values into *out (of e->type). */
static tsl_status eval(interp_state *s, const lang_expr *e, interp_val *out)
{
    tsl_status st;
    interp_val v = {0, 0};
    switch (e->kind) {
    case LANG_E_INT:
        *out = convert((interp_val){0, e->ival}, TSL_DTYPE_I64, e->type);
        return TSL_OK;
    case LANG_E_FLOAT:
        *out = convert((interp_val){e->fval, 0}, TSL_DTYPE_F64, e->type);
        return TSL_OK;
    case LANG_E_INDEX:
        *out = convert((interp_val){0, s->var[e->slot]}, TSL_DTYPE_I64, e->type);
        return TSL_OK;
    case LANG_E_SIZE:
        *out = convert((interp_val){0, s->b->sizes[e->slot]}, TSL_DTYPE_I64, e->type);
        return TSL_OK;
    case LANG_E_SCALAR: {
        const interp_tensor *t = &s->t[e->tensor->index];
        *out = convert(convert((interp_val){t->scalar, 0}, TSL_DTYPE_F64, t->dtype), t->dtype,
                       e->type);
        return TSL_OK;
    }
    case LANG_E_ACCESS: {
        int64_t at;
        if ((st = eval_address(s, e, &at))) return st;
        tsl_dtype tt = s->t[e->tensor->index].dtype;
        *out = convert(load_elem(tt, s->t[e->tensor->index].base, at), tt, e->type);
        return TSL_OK;
    }
    case LANG_E_UNARY:
        if ((st = eval(s, e->args[0], &v))) return st;
        if (e->op == LANG_NOT) {
            *out = convert((interp_val){0, !truth(v, e->args[0]->type)}, TSL_DTYPE_BOOL, e->type);
        } else {
            v = convert(v, e->args[0]->type, e->type);
            if (is_float(e->type))
                v.f = -v.f;
            else
                v.i = wrap_int(e->type, (int64_t)(0 - (uint64_t)v.i));
            *out = v;
        }
        return TSL_OK;
    case LANG_E_BINARY: return eval_binary(s, e, out);
    case LANG_E_SELECT:
        if ((st = eval(s, e->args[0], &v))) return st;
        {
            const lang_expr *pick = truth(v, e->args[0]->type) ? e->args[1] : e->args[2];
            if ((st = eval(s, pick, &v))) return st;
            *out = convert(v, pick->type, e->type);
        }
        return TSL_OK;
    case LANG_E_CALL: return eval_call(s, e, out);
    case LANG_E_CAST:
        if ((st = eval(s, e->args[0], &v))) return st;
        /* half(x) of a half expression rounds its float32 value */
        *out = is_float(e->type) && e->args[0]->type == e->type ? (interp_val){round_float(e->type, v.f), 0}
                                                                 : convert(v, e->args[0]->type, e->type);
        return TSL_OK;
    }
    TSL_ASSERT(0 && "eval: bad expression kind");
}

/* ---- statements ---------------------------------------------------------- */

/* The identity of a reduction operator in the accumulator of dtype t. */
static interp_val identity(lang_assign_op op, tsl_dtype t)
{
    interp_val v = {0, 0};
    int fl = is_float(t);
    switch (op) {
    case LANG_MUL_EQ: v.f = 1; v.i = 1; break;
    case LANG_MAX_EQ: if (fl) v.f = -INFINITY; else v.i = int_min(t); break;
    case LANG_MIN_EQ: if (fl) v.f = INFINITY; else v.i = int_max(t); break;
    default: break; /* + and = : zero */
    }
    return v;
}

/* acc (+)= v, in the accumulator of LHS dtype t. */
static interp_val combine(lang_assign_op op, tsl_dtype t, interp_val acc, interp_val v)
{
    if (is_float(t)) {
        switch (op) {
        case LANG_ADD_EQ: acc.f += v.f; break;
        case LANG_MUL_EQ: acc.f *= v.f; break;
        case LANG_MAX_EQ: acc.f = dtype_max_num(acc.f, v.f); break;
        case LANG_MIN_EQ: acc.f = dtype_min_num(acc.f, v.f); break;
        default: acc = v; break;
        }
        return acc;
    }
    int uns = t == TSL_DTYPE_U64;
    uint64_t ua = (uint64_t)acc.i, uv = (uint64_t)v.i;
    switch (op) {
    case LANG_ADD_EQ: acc.i = wrap_int(t, (int64_t)(ua + uv)); break;
    case LANG_MUL_EQ: acc.i = wrap_int(t, (int64_t)(ua * uv)); break;
    case LANG_MAX_EQ: if (uns ? uv > ua : v.i > acc.i) acc = v; break;
    case LANG_MIN_EQ: if (uns ? uv < ua : v.i < acc.i) acc = v; break;
    default: acc = v; break;
    }
    return acc;
}

/* Advance the odometer over vars [from, to): returns 0 when it wrapped. */
static int odometer_next(int64_t *var, const lang_bound_stmt *bs, int from, int to)
{
    for (int k = to - 1; k >= from; k--) {
        if (++var[k] < bs->hi[k]) return 1;
        var[k] = bs->lo[k];
    }
    return 0;
}

/* Number of points of the box of vars [from, to); 0 if any is empty. */
static int64_t box_size(const lang_bound_stmt *bs, int from, int to)
{
    int64_t n = 1;
    for (int k = from; k < to; k++) {
        if (bs->hi[k] <= bs->lo[k]) return 0;
        n *= bs->hi[k] - bs->lo[k];
    }
    return n;
}

static int64_t lhs_address(const interp_tensor *t, const int64_t *var, int rank)
{
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off += var[d] * t->stride[d];
    return off;
}

static tsl_status run_stmt(interp_state *s, const lang_stmt *stmt, const lang_bound_stmt *bs)
{
    const interp_tensor *lt = &s->t[stmt->lhs->index];
    int niter = stmt->niter, nvars = stmt->nvars;
    int64_t npts = box_size(bs, 0, niter);
    if (npts == 0) return TSL_OK;
    for (int k = 0; k < niter; k++)
        if (bs->lo[k] < 0 || bs->hi[k] > lt->shape[k]) {
            diag_error_at(s->d, s->def->src, stmt->offset, TSL_ERR_INTERNAL,
                          "internal: range [%lld, %lld) of '%s' exceeds dimension %d of "
                          "'%s' (size %lld)",
                          (long long)bs->lo[k], (long long)bs->hi[k], stmt->vars[k].name, k,
                          stmt->lhs->name, (long long)lt->shape[k]);
            return TSL_ERR_INTERNAL;
        }
    if ((uint64_t)npts > SIZE_MAX / sizeof(interp_val)) {
        diag_error(s->d, TSL_ERR_NOMEM, "interpreter: %lld elements for '%s' do not fit",
                   (long long)npts, stmt->lhs->name);
        return TSL_ERR_NOMEM;
    }
    interp_val *acc = malloc((size_t)npts * sizeof *acc);
    if (!acc) {
        diag_error(s->d, TSL_ERR_NOMEM, "interpreter: out of memory (%zu bytes for '%s')",
                   (size_t)npts * sizeof *acc, stmt->lhs->name);
        return TSL_ERR_NOMEM;
    }
    tsl_dtype t = lt->dtype;
    const lang_expr *rhs = stmt->rhs;
    int have_red = box_size(bs, niter, nvars) > 0;
    tsl_status st = TSL_OK;
    for (int k = 0; k < nvars; k++) s->var[k] = bs->lo[k];
    int64_t p = 0;
    do { /* over the LHS box */
        interp_val a;
        if (stmt->op == LANG_ASSIGN)
            a = (interp_val){0, 0};
        else if (stmt->bang)
            a = identity(stmt->op, t);
        else
            a = load_elem(t, lt->base, lhs_address(lt, s->var, niter));
        if (have_red) {
            for (int k = niter; k < nvars; k++) s->var[k] = bs->lo[k];
            do { /* over the reduction box */
                interp_val v;
                if ((st = eval(s, rhs, &v))) goto done;
                a = combine(stmt->op, t, a, convert(v, rhs->type, t));
            } while (odometer_next(s->var, bs, niter, nvars));
        }
        acc[p++] = a;
    } while (odometer_next(s->var, bs, 0, niter));

    for (int k = 0; k < niter; k++) s->var[k] = bs->lo[k];
    p = 0;
    do {
        store_elem(t, lt->base, lhs_address(lt, s->var, niter), acc[p++]);
    } while (odometer_next(s->var, bs, 0, niter));
done:
    free(acc);
    return st;
}

tsl_status interp_run(const lang_bound *b, const interp_tensor *tensors, tsl_diag *d)
{
    const lang_def *def = b->def;
    interp_state s = {b, def, NULL, NULL, d};
    tsl_status st = TSL_OK;
    int maxvars = 1;
    for (int i = 0; i < def->nstmts; i++)
        if (def->stmts[i].nvars > maxvars) maxvars = def->stmts[i].nvars;
    s.t = calloc((size_t)def->ntensors + 1, sizeof *s.t);
    s.var = calloc((size_t)maxvars, sizeof *s.var);
    if (!s.t || !s.var) {
        st = TSL_ERR_NOMEM;
        diag_error(d, st, "interpreter: out of memory");
        goto out;
    }
    for (int i = 0; i < def->ntensors; i++) {
        s.t[i] = tensors[i];
        if (!(def->tensors[i]->flags & LANG_TENSOR_TEMP)) continue;
        /* a temporary: C order, shape from range inference */
        const lang_tensor *lt = def->tensors[i];
        interp_tensor *t = &s.t[i];
        t->base = NULL;
        t->dtype = lt->dtype;
        t->rank = lt->rank;
        int64_t n = 1;
        for (int k = lt->rank - 1; k >= 0; k--) {
            t->shape[k] = b->shapes[i][k];
            t->stride[k] = n;
            if (t->shape[k] && n > INT64_MAX / t->shape[k]) n = -1;
            if (n >= 0) n *= t->shape[k];
        }
        if (n < 0 || (uint64_t)n > SIZE_MAX / 16 ||
            !(t->base = calloc(n ? tsl_dtype_nbytes(t->dtype, n) : 1, 1))) {
            st = TSL_ERR_NOMEM;
            diag_error(d, st, "interpreter: out of memory for temporary '%s' (%lld elements)",
                       lt->name, (long long)n);
            goto out;
        }
    }
    for (int i = 0; i < def->nstmts && !st; i++) st = run_stmt(&s, &def->stmts[i], &b->stmts[i]);
out:
    if (s.t)
        for (int i = 0; i < def->ntensors; i++)
            if (def->tensors[i]->flags & LANG_TENSOR_TEMP) free(s.t[i].base);
    free(s.t);
    free(s.var);
    return st;
}
