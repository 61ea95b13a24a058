/* plan.c — the launch plan's integer expressions and its lifetime
 * (plan.h); serialising it is plan_io.c's job. */
#include <string.h>

#include "runtime/plan.h"

static int64_t plan_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

int64_t rt_expr_eval(const rt_expr *e, const int64_t *vals, int nvals, int *ok)
{
    int64_t st[RT_EXPR_MAX];
    int sp = 0;
    if (!e || e->n <= 0 || e->n > RT_EXPR_MAX) goto bad;
    for (int i = 0; i < e->n; i++) {
        const rt_xins *in = &e->ins[i];
        if (in->op == RT_X_CONST || in->op == RT_X_VAL) {
            if (sp == RT_EXPR_MAX) goto bad;
            if (in->op == RT_X_VAL && (in->v < 0 || in->v >= nvals)) goto bad;
            st[sp++] = in->op == RT_X_CONST ? in->v : vals[in->v];
            continue;
        }
        if (in->op == RT_X_NEG || in->op == RT_X_NOT) {
            if (sp < 1) goto bad;
            st[sp - 1] = in->op == RT_X_NEG ? (int64_t)(0 - (uint64_t)st[sp - 1]) : !st[sp - 1];
            continue;
        }
        if (sp < 2 || in->op < 0 || in->op >= RT_X_COUNT) goto bad;
        int64_t a = st[sp - 2], b = st[sp - 1], v = 0;
        switch ((rt_xop)in->op) {
        case RT_X_OR: v = a || b; break;
        case RT_X_AND: v = a && b; break;
        case RT_X_EQ: v = a == b; break;
        case RT_X_NE: v = a != b; break;
        case RT_X_LT: v = a < b; break;
        case RT_X_LE: v = a <= b; break;
        case RT_X_GT: v = a > b; break;
        case RT_X_GE: v = a >= b; break;
        case RT_X_ADD: v = (int64_t)((uint64_t)a + (uint64_t)b); break;
        case RT_X_SUB: v = (int64_t)((uint64_t)a - (uint64_t)b); break;
        case RT_X_MUL: v = (int64_t)((uint64_t)a * (uint64_t)b); break;
        case RT_X_MIN: v = a < b ? a : b; break;
        case RT_X_MAX: v = a > b ? a : b; break;
        case RT_X_DIV:
        case RT_X_MOD:
        case RT_X_CDIV:
            if (b == 0 || (a == INT64_MIN && b == -1)) goto bad;
            v = in->op == RT_X_DIV ? plan_floordiv(a, b)
                : in->op == RT_X_MOD ? a - plan_floordiv(a, b) * b
                                     : -plan_floordiv(-a, b);
            break;
        default: goto bad;
        }
        st[sp - 2] = v;
        sp--;
    }
    if (sp == 1) return st[0];
bad:
    *ok = 0;
    return 0;
}

rt_plan *rt_plan_create(void)
{
    tsl_arena *a = arena_create();
    rt_plan *p = a ? arena_alloc(a, sizeof *p) : NULL;
    if (!p) {
        arena_free(a);
        return NULL;
    }
    p->arena = a;
    return p;
}

void rt_plan_free(rt_plan *p)
{
    if (p) arena_free(p->arena);
}

int rt_plan_tensor_used(const rt_plan *p, int t)
{
    for (int i = 0; i < p->nlaunches; i++) {
        const rt_kernel *k = &p->kernels[p->launches[i].kernel];
        for (int j = 0; j < k->nparams; j++)
            if (k->params[j].is_tensor && p->launches[i].args[j].kind == RT_ARG_TENSOR &&
                p->launches[i].args[j].index == t)
                return 1;
    }
    return 0;
}
