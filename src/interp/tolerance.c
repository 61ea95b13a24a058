/* tolerance.c — how closely a target's output must match the interpreter's
 * (interp.h): one rule for `tessel run --check`, the tuner's check and the
 * differential tester.
 *
 * The interpreter and the targets compute every elementwise operation
 * alike (docs/language.md "Arithmetic and conversions"); they differ by
 * the accumulation of reductions (float64 against float32), by the few
 * ulp of the targets' transcendental functions, and by contractions
 * (fused multiply-adds; tensor cores forming f16 products exactly). So an
 * output is as close as the narrowest float it is computed through allows
 * — a float32 temporary or float32 arithmetic feeding a float64 output
 * gives float32's tolerance — grown with the longest reduction behind it.
 * Callers compare relative to max(1, max|ref|) (the CLI and the tuner for
 * every output, the differential tester for outputs behind a reduction
 * and 16-bit ones). */
#include <math.h>
#include <stdlib.h>

#include "interp/interp.h"

/* The base tolerance of float dtype t; 0 for integers and bool. */
static double tol_base(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    if (!d->is_float) return 0.0;
    switch (t) {
    case TSL_DTYPE_F64: return 1e-12;
    case TSL_DTYPE_F32: return 1e-5;
    case TSL_DTYPE_F16:
    case TSL_DTYPE_BF16: return 1e-2;
    default: return ldexp(1.0, -d->desc.man); /* a low-bit float: one step of its mantissa */
    }
}

/* The loosest base tolerance of what e computes: arithmetic on floats runs
 * in float32 at least (16-bit and low-bit floats compute in float32), a
 * cast rounds to its type. Reads of tensors count where those are written
 * (their statements); literals, sizes and scalars are the same on both
 * sides. Marks the tensors e reads in need. Iterative: expressions are
 * user-sized (deep chains). */
static double expr_base(const lang_expr *root, char *need)
{
    double worst = 0;
    const lang_expr **stack = malloc(sizeof *stack * 64);
    int n = 0, cap = 64;
    if (!stack) return tol_base(TSL_DTYPE_F16); /* out of memory: a loose answer, never a crash */
    stack[n++] = root;
    while (n) {
        const lang_expr *e = stack[--n];
        if (!e) continue;
        tsl_dtype t = e->kind == LANG_E_BINARY ? e->optype : e->type;
        switch (e->kind) {
        case LANG_E_ACCESS: need[e->tensor->index] = 1; break;
        case LANG_E_CAST: worst = fmax(worst, tol_base(t)); break;
        case LANG_E_UNARY:
        case LANG_E_BINARY:
        case LANG_E_SELECT:
        case LANG_E_CALL:
            if (dtype_info_of(t)->is_float) worst = fmax(worst, tol_base(t == TSL_DTYPE_F64 ? t : TSL_DTYPE_F32));
            break;
        default: break;
        }
        for (int i = 0; i < e->nargs; i++) {
            if (n == cap) {
                const lang_expr **s2 = realloc(stack, sizeof *stack * (size_t)cap * 2);
                if (!s2) {
                    free(stack);
                    return tol_base(TSL_DTYPE_F16);
                }
                stack = s2;
                cap *= 2;
            }
            stack[n++] = e->args[i];
        }
    }
    free(stack);
    return worst;
}

double interp_tolerance(const lang_bound *b, int out, int64_t *reduction_length)
{
    const lang_def *def = b->def;
    char *need = calloc((size_t)def->ntensors + 1, 1);
    int64_t most = 1;
    double base = tol_base(def->tensors[out]->dtype);
    if (!need) {
        if (reduction_length) *reduction_length = 1;
        return base;
    }
    need[out] = 1;
    /* statements in reverse: one that writes a needed tensor makes what it reads needed */
    for (int i = def->nstmts - 1; i >= 0; i--) {
        const lang_stmt *s = &def->stmts[i];
        if (!need[s->lhs->index]) continue;
        base = fmax(base, tol_base(s->lhs->dtype));
        base = fmax(base, expr_base(s->rhs, need));
        int64_t n = 1;
        for (int v = s->niter; v < s->nvars; v++) {
            int64_t e = b->stmts[i].hi[v] - b->stmts[i].lo[v];
            n = e <= 0 ? 0 : n > INT64_MAX / e ? INT64_MAX : n * e;
        }
        if (n > most) most = n;
    }
    free(need);
    if (reduction_length) *reduction_length = most;
    if (!dtype_info_of(def->tensors[out]->dtype)->is_float) return 0.0; /* integers and bools: exact */
    /* past 256 terms, grown by sqrt(len / 256): the typical growth of
     * rounding errors that do not cancel (1e6 f32 terms get 6e-4) */
    return most > 256 ? base * sqrt((double)most / 256) : base;
}
