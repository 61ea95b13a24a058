/* check.c — the oracle side of measuring (tune.h): the interpreter's
 * outputs for a case, the comparison a compiled output must pass (the CLI's
 * outputs for a case, the comparison a compiled output must pass (the one rule
 * of interp_tolerance, as `--check` and the differential tester use it),
 * checks at the case's sizes or reduced ones, and the op graph's work. */
#include <math.h>
#include <string.h>

#include "sched/sched.h"
#include "tune/tune.h"

/* ---- work -------------------------------------------------------------------------------- */

/* Arithmetic operations one evaluation of e performs (a read is free). */
static double expr_ops(const lang_expr *e)
{
    if (!e) return 0;
    double n = e->kind == LANG_E_BINARY || e->kind == LANG_E_UNARY || e->kind == LANG_E_CALL ||
                       e->kind == LANG_E_SELECT
                   ? 1
                   : 0;
    if (e->kind == LANG_E_ACCESS) return 0; /* index arithmetic is addressing, not work */
    for (int i = 0; i < e->nargs; i++) n += expr_ops(e->args[i]);
    return n;
}

static double tensor_bytes(const lang_def *def, const lang_bound *b, int i)
{
    const lang_tensor *t = def->tensors[i];
    double n = 1;
    for (int k = 0; k < t->rank; k++) n *= (double)b->shapes[i][k];
    return n * (double)tsl_dtype_bits(t->dtype) / 8;
}

void tune_work(const lang_def *def, const lang_bound *b, double *flops, double *bytes)
{
    double f = 0, by = 0;
    for (int s = 0; s < def->nstmts; s++) {
        const lang_stmt *st = &def->stmts[s];
        double box = 1;
        for (int v = 0; v < st->nvars; v++) {
            int64_t e = b->stmts[s].hi[v] - b->stmts[s].lo[v];
            box *= e > 0 ? (double)e : 0;
        }
        /* the body, and the accumulation of a reduction (+=, max=, ...) */
        f += box * (expr_ops(st->rhs) + (st->op != LANG_ASSIGN ? 1 : 0));
    }
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (!t->is_scalar && (t->flags & (LANG_TENSOR_INPUT | LANG_TENSOR_OUTPUT))) by += tensor_bytes(def, b, i);
    }
    *flops = f;
    *bytes = by;
}

int tune_ref_affordable(const tune_case *c, double limit)
{
    double f, by;
    tune_work(c->def, c->b, &f, &by);
    return f <= limit;
}

/* ---- tolerance and comparison ------------------------------------------------------------- */

double tune_compare(tsl_dtype dt, const void *got, const void *ref, int64_t n)
{
    int exact = !dtype_info_of(dt)->is_float;
    double maxdiff = 0, maxref = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = dtype_get(dt, got, i), b = dtype_get(dt, ref, i);
        if (isnan(a) || isnan(b)) {
            if (isnan(a) && isnan(b)) continue;
            return INFINITY;
        }
        if (isinf(a) || isinf(b)) {
            if (a == b) continue;
            return INFINITY;
        }
        double diff = fabs(a - b);
        if (diff > maxdiff) maxdiff = diff;
        if (fabs(b) > maxref) maxref = fabs(b);
    }
    return exact ? maxdiff : maxdiff / (maxref > 1 ? maxref : 1);
}

/* ---- the reference ------------------------------------------------------------------------ */

static int64_t numel(const lang_def *def, const lang_bound *b, int i)
{
    int64_t n = 1;
    for (int k = 0; k < def->tensors[i]->rank; k++) n *= b->shapes[i][k];
    return n;
}

/* Views of the case with every output in a fresh C-order host buffer
 * (outs[i]); inputs are the case's own (in/out tensors copied, so the
 * caller's data is not changed). */
static tsl_status fresh_outputs(const tune_case *c, interp_tensor *v, char **outs, tsl_diag *d)
{
    const lang_def *def = c->def;
    memcpy(v, c->views, sizeof *v * (size_t)def->ntensors);
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        outs[i] = NULL;
        if (t->is_scalar || !(t->flags & LANG_TENSOR_OUTPUT)) continue;
        int64_t n = numel(def, c->b, i);
        size_t bytes = tsl_dtype_nbytes(v[i].dtype, n);
        outs[i] = calloc(bytes ? bytes : 1, 1);
        if (!outs[i]) {
            diag_error(d, TSL_ERR_NOMEM, "out of memory for a copy of '%s' (%zu bytes)", t->name, bytes);
            return TSL_ERR_NOMEM;
        }
        /* in/out: start from the caller's values, in C order */
        if (t->flags & LANG_TENSOR_INPUT) {
            int64_t idx[TSL_MAX_RANK] = {0};
            for (int64_t e = 0; e < n; e++) {
                int64_t off = 0;
                for (int k = 0; k < v[i].rank; k++) off += idx[k] * v[i].stride[k];
                dtype_set(v[i].dtype, outs[i], e, dtype_get(v[i].dtype, v[i].base, off));
                for (int k = v[i].rank - 1; k >= 0; k--) {
                    if (++idx[k] < v[i].shape[k]) break;
                    idx[k] = 0;
                }
            }
        }
        v[i].base = outs[i];
        int64_t st = 1;
        for (int k = v[i].rank - 1; k >= 0; k--) {
            v[i].stride[k] = st;
            st *= v[i].shape[k];
        }
    }
    return TSL_OK;
}

tsl_status tune_ref_make(const tune_case *c, tune_ref *r, tsl_diag *d)
{
    const lang_def *def = c->def;
    memset(r, 0, sizeof *r);
    r->n = def->ntensors;
    r->out = calloc((size_t)r->n + 1, sizeof *r->out);
    r->tol = calloc((size_t)r->n + 1, sizeof *r->tol);
    interp_tensor *v = calloc((size_t)r->n + 1, sizeof *v);
    tsl_status st = r->out && r->tol && v ? TSL_OK : TSL_ERR_NOMEM;
    if (st) diag_error(d, st, "out of memory");
    if (!st) st = fresh_outputs(c, v, r->out, d);
    if (!st) st = interp_run(c->b, v, d);
    for (int i = 0; !st && i < r->n; i++)
        if (r->out[i]) r->tol[i] = interp_tolerance(c->b, i, NULL);
    free(v);
    if (st) tune_ref_free(r);
    return st;
}

void tune_ref_free(tune_ref *r)
{
    for (int i = 0; r->out && i < r->n; i++) free(r->out[i]);
    free(r->out);
    free(r->tol);
    memset(r, 0, sizeof *r);
}

tsl_status tune_check(rt_exec *e, const tune_case *c, const tune_ref *r, double *err, tsl_diag *d)
{
    const lang_def *def = c->def;
    interp_tensor *v = calloc((size_t)def->ntensors + 1, sizeof *v);
    char **outs = calloc((size_t)def->ntensors + 1, sizeof *outs);
    tsl_status st = v && outs ? TSL_OK : TSL_ERR_NOMEM;
    if (st) diag_error(d, st, "out of memory");
    *err = 0;
    /* poisoned outputs: a run that writes nothing cannot pass */
    if (!st) st = fresh_outputs(c, v, outs, d);
    for (int i = 0; !st && i < def->ntensors; i++)
        if (outs[i] && !(def->tensors[i]->flags & LANG_TENSOR_INPUT)) {
            int64_t n = numel(def, c->b, i);
            for (int64_t k = 0; k < n; k++) dtype_set(v[i].dtype, outs[i], k, dtype_is_float(v[i].dtype) ? NAN : 77);
        }
    if (!st) st = drv_run(e, c->b, v, d);
    for (int i = 0; !st && i < def->ntensors; i++) {
        if (!outs[i]) continue;
        double x = tune_compare(v[i].dtype, outs[i], r->out[i], numel(def, c->b, i));
        double rel = r->tol[i] > 0 ? x / r->tol[i] : (x > 0 ? INFINITY : 0);
        if (rel > *err) *err = rel;
        if (rel > 1) {
            diag_error(d, TSL_ERR_RUNTIME, "wrong result: '%s' differs from the interpreter by %.3g (tolerance %.1g)",
                       def->tensors[i]->name, x, r->tol[i]);
            st = TSL_ERR_RUNTIME;
        }
    }
    for (int i = 0; outs && i < def->ntensors; i++) free(outs[i]);
    free(outs);
    free(v);
    return st;
}

/* Sizes every one at most cap, then the largest that still binds halved
 * until the work is at most max_ops (conv2d's N=8 C=64 H=W=56 K=64 is
 * 1.7e9 operations under a cap of 67: minutes of the interpreter). */
static tsl_status reduce_sizes(tsl_arena *a, const lang_def *def, const lang_bound *b, int64_t cap, double max_ops,
                               lang_bound **out, tsl_diag *d)
{
    int64_t *sz = arena_alloc(a, sizeof *sz * (size_t)(def->nsizes + 1));
    char *fixed = arena_alloc(a, (size_t)def->nsizes + 1); /* halving it does not bind */
    for (int i = 0; i < def->nsizes; i++) {
        sz[i] = b->sizes[i] < cap ? b->sizes[i] : cap;
        fixed[i] = 0;
    }
    tsl_status st = lang_bind(a, def, sz, out, d);
    for (int guard = 0; !st && guard < 64 * (def->nsizes + 1); guard++) {
        double f, by;
        tune_work(def, *out, &f, &by);
        if (f <= max_ops) break;
        int big = -1;
        for (int i = 0; i < def->nsizes; i++)
            if (!fixed[i] && sz[i] > 1 && (big < 0 || sz[i] > sz[big])) big = i;
        if (big < 0) break; /* nothing left to halve: check at these */
        int64_t was = sz[big];
        sz[big] = (was + 1) / 2;
        tsl_diag scratch = {0};
        lang_bound *nb = NULL;
        if (lang_bind(a, def, sz, &nb, &scratch) == TSL_OK) {
            *out = nb;
        } else {
            sz[big] = was;
            fixed[big] = 1;
        }
        diag_free(&scratch);
    }
    return st;
}

tsl_status tune_case_reduce(tsl_arena *a, const lang_def *def, const lang_bound *b, int64_t cap, double max_ops,
                            tune_case *out, tsl_diag *d)
{
    lang_bound *rb = NULL;
    tsl_status st = reduce_sizes(a, def, b, cap, max_ops, &rb, d);
    const int64_t *sz = rb ? rb->sizes : b->sizes;
    interp_tensor *v = arena_alloc(a, sizeof *v * (size_t)(def->ntensors + 1));
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)v;
    int64_t small = 4; /* integers stay below every size: a gather's indices are in range */
    for (int i = 0; i < def->nsizes; i++)
        if (sz[i] < small) small = sz[i] > 0 ? sz[i] : 1;
    for (int i = 0; !st && i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        /* what the kernels take (sched/lowbit.c): a low-bit parameter
         * packed, a low-bit output as its carrier; the carrier for a
         * parameter had the kernels read its codes as packed fields */
        tsl_dtype dt = sched_tensor_boundary_dtype(t);
        v[i].dtype = dt;
        if (t->is_scalar) {
            v[i].scalar = 0.75;
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        int64_t n = numel(def, rb, i);
        v[i].base = arena_alloc(a, tsl_dtype_nbytes(dt, n) + 1);
        v[i].rank = t->rank;
        int64_t stv = 1;
        for (int k = t->rank - 1; k >= 0; k--) {
            v[i].shape[k] = rb->shapes[i][k];
            v[i].stride[k] = stv;
            stv *= rb->shapes[i][k];
        }
        for (int64_t k = 0; k < n; k++) { /* fresh values: floats in [-1, 1), ints in [0, small) */
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(rng >> 11) / 9007199254740992.0;
            dtype_set(dt, v[i].base, k, dtype_is_float(dt) ? 2 * u - 1 : (double)(int64_t)(u * (double)small));
        }
    }
    *out = (tune_case){def, rb, v};
    return st;
}

tsl_status tune_check_reduced(rt_exec *e, const lang_def *def, const lang_bound *b, int64_t cap, double max_ops,
                              double *err, tsl_diag *d)
{
    tsl_arena *a = arena_create();
    tune_case rc = {0};
    tsl_status st = tune_case_reduce(a, def, b, cap, max_ops, &rc, d);
    tune_ref r = {0};
    if (!st) st = tune_ref_make(&rc, &r, d);
    if (!st) st = tune_check(e, &rc, &r, err, d);
    tune_ref_free(&r);
    arena_free(a);
    return st;
}
