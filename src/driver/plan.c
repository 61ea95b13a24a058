/* plan.c — the emit pass and the scheduler's launch plan turned into the
 * runtime's data (runtime/plan.h): what a kernel needs bound and how its
 * grid, size branches and parameter dims follow from its arguments, with
 * every tile expression rewritten as a postfix program over the launch's
 * environment (the kernel's size symbols, then its parameters' values).
 *
 * Requires verified, pipeline-free kernels. A kernel whose grid or dims
 * read anything but size symbols, int parameters and constants, or whose
 * size symbol is no parameter's dim, cannot run from data: that is
 * TSL_ERR_INTERNAL naming the kernel (the scheduler never makes one). */
#include <string.h>

#include "driver/driver_int.h"

typedef struct pb {
    const tile_kernel *k;
    tsl_arena *a; /* the plan's */
    rt_xins buf[RT_EXPR_MAX];
    int n;
    int bad;
} pb;

static void pb_emit(pb *c, rt_xop op, int64_t v)
{
    if (c->n == RT_EXPR_MAX) {
        c->bad = 1;
        return;
    }
    c->buf[c->n++] = (rt_xins){op, v};
}

static const rt_xop pb_binop[] = {
#define X(n, t, p) [TILE_OP_##n] = RT_X_##n,
    TILE_BINOPS(X)
#undef X
};

static void pb_expr(pb *c, const tile_expr *e)
{
    if (!e || c->bad) {
        c->bad = 1;
        return;
    }
    switch (e->kind) {
    case TILE_E_INT: pb_emit(c, RT_X_CONST, e->i); return;
    case TILE_E_VALUE: {
        const tile_kernel *k = c->k;
        for (int s = 0; s < k->nsyms; s++)
            if (k->syms[s] == e->v) {
                pb_emit(c, RT_X_VAL, s);
                return;
            }
        for (int q = 0; q < k->nparams; q++)
            if (k->params[q] == e->v && e->v->kind == TILE_V_SCALAR) {
                pb_emit(c, RT_X_VAL, k->nsyms + q);
                return;
            }
        c->bad = 1;
        return;
    }
    case TILE_E_NEG:
    case TILE_E_NOT:
        pb_expr(c, e->a);
        pb_emit(c, e->kind == TILE_E_NEG ? RT_X_NEG : RT_X_NOT, 0);
        return;
    case TILE_E_BIN:
        if ((unsigned)e->op >= TSL_COUNTOF(pb_binop)) break;
        pb_expr(c, e->a);
        pb_expr(c, e->b);
        pb_emit(c, pb_binop[e->op], 0);
        return;
    default: break;
    }
    c->bad = 1;
}

/* e as an rt_expr in the plan's arena; 0 when it cannot be one. */
static int pb_convert(pb *c, const tile_expr *e, rt_expr *out)
{
    c->n = 0;
    c->bad = 0;
    pb_expr(c, e);
    if (c->bad) return 0;
    out->n = c->n;
    out->ins = arena_alloc(c->a, sizeof *out->ins * (size_t)c->n);
    memcpy(out->ins, c->buf, sizeof *out->ins * (size_t)c->n);
    return 1;
}

static tsl_status pb_fail(const tile_kernel *k, const char *what, tsl_diag *d)
{
    diag_error(d, TSL_ERR_INTERNAL, "internal: kernel '%s' cannot run from a launch plan: %s", k->name, what);
    return TSL_ERR_INTERNAL;
}

/* The runtime's view of kernel k: ABI, bindings, grid, branches. */
static tsl_status pb_kernel(const tile_kernel *k, const drv_emitted *em, const char *source, rt_plan *p,
                            rt_kernel *rk, tsl_diag *d)
{
    tsl_arena *a = p->arena;
    pb c = {.k = k, .a = a};
    if (k->nparams > RT_MAX_PARAMS) return pb_fail(k, "more than 64 parameters", d);
    rk->name = arena_strdup(a, k->name);
    rk->entry = arena_strdup(a, em->entry);
    rk->source = arena_strdup(a, source);
    rk->threads = k->threads;
    rk->cluster = k->cluster > 1 ? k->cluster : 0;
    rk->smem = em->smem;
    rk->nparams = k->nparams;
    rk->params = arena_alloc(a, sizeof *rk->params * (size_t)(k->nparams + 1));
    for (int q = 0; q < k->nparams; q++) {
        const tile_value *v = k->params[q];
        rt_param *pa = &rk->params[q];
        pa->name = arena_strdup(a, v->name);
        if (v->kind != TILE_V_TENSOR) {
            pa->is_float = tile_value_is_typed_scalar(v) && v->type.dt.kind == TILE_DT_FLOAT;
            continue;
        }
        tsl_dtype dt;
        if (v->type.rank > RT_MAX_RANK) return pb_fail(k, "a tensor parameter has too many dims", d);
        pa->is_tensor = 1;
        pa->dtype = tile_dtype_to_tsl(v->type.dt, &dt) ? -1 : (int)dt; /* for people: the executor binds bytes */
        pa->rank = v->type.rank;
        pa->dims = arena_alloc(a, sizeof *pa->dims * (size_t)(pa->rank + 1));
        for (int i = 0; i < pa->rank; i++)
            if (!pb_convert(&c, v->type.dims[i], &pa->dims[i])) return pb_fail(k, "a parameter's dim", d);
    }
    rk->nsyms = k->nsyms;
    rk->sym_names = arena_alloc(a, sizeof *rk->sym_names * (size_t)(k->nsyms + 1));
    rk->sym_param = arena_alloc(a, sizeof *rk->sym_param * (size_t)(k->nsyms + 1));
    rk->sym_dim = arena_alloc(a, sizeof *rk->sym_dim * (size_t)(k->nsyms + 1));
    for (int s = 0; s < k->nsyms; s++) {
        int found = 0;
        rk->sym_names[s] = arena_strdup(a, k->syms[s]->name);
        for (int q = 0; q < k->nparams && !found; q++) {
            const tile_value *v = k->params[q];
            for (int i = 0; v->kind == TILE_V_TENSOR && i < v->type.rank && !found; i++) {
                const tile_expr *e = v->type.dims[i];
                if (e && e->kind == TILE_E_VALUE && e->v == k->syms[s]) {
                    rk->sym_param[s] = q;
                    rk->sym_dim[s] = i;
                    found = 1;
                }
            }
        }
        if (!found) return pb_fail(k, "a size symbol is no parameter's dim", d);
    }
    rk->ngrid = k->ngrid;
    for (int i = 0; i < k->ngrid && i < 3; i++)
        if (!pb_convert(&c, k->grid[i], &rk->grid[i])) return pb_fail(k, "its grid", d);
    rk->nbranches = em->nbranches;
    rk->branches = arena_alloc(a, sizeof *rk->branches * (size_t)(em->nbranches + 1));
    for (int i = 0; i < em->nbranches; i++)
        if (!pb_convert(&c, em->branches[i], &rk->branches[i])) return pb_fail(k, "a size branch", d);
    rk->ntmaps = em->ntmaps;
    rk->tmaps = arena_alloc(a, sizeof *rk->tmaps * (size_t)(em->ntmaps + 1));
    if (em->ntmaps) memcpy(rk->tmaps, em->tmaps, sizeof *rk->tmaps * (size_t)em->ntmaps);
    rk->nerrs = em->nerrs;
    rk->errs = arena_alloc(a, sizeof *rk->errs * (size_t)(em->nerrs + 1));
    for (int i = 0; i < em->nerrs; i++) {
        rk->errs[i] = em->errs[i];
        rk->errs[i].msg = arena_strdup(a, em->errs[i].msg);
        rk->errs[i].where = arena_strdup(a, em->errs[i].where);
    }
    return TSL_OK;
}

/* Size expression e (over the program's size slots) appended to buf[*n]
 * in postfix; 0 when it does not fit in cap. */
static int pb_sexpr(const lang_sexpr *e, rt_xins *buf, int *n, int cap)
{
    static const int ops[] = {[LANG_SX_ADD] = RT_X_ADD, [LANG_SX_SUB] = RT_X_SUB, [LANG_SX_MUL] = RT_X_MUL,
                              [LANG_SX_FLOORDIV] = RT_X_DIV, [LANG_SX_MIN] = RT_X_MIN, [LANG_SX_MAX] = RT_X_MAX};
    if (*n >= cap) return 0;
    if (e->kind == LANG_SX_CONST || e->kind == LANG_SX_SYM) {
        buf[(*n)++] = (rt_xins){e->kind == LANG_SX_CONST ? RT_X_CONST : RT_X_VAL,
                                e->kind == LANG_SX_CONST ? e->value : e->sym};
        return 1;
    }
    if (!pb_sexpr(e->a, buf, n, cap) || !pb_sexpr(e->b, buf, n, cap) || *n >= cap) return 0;
    buf[(*n)++] = (rt_xins){ops[e->kind], 0};
    return 1;
}

/* A `rows` argument's cut (sched.h): the range hi of var v of statement s. */
static tsl_status pb_rows(const lang_def *def, int s, int v, tsl_arena *a, rt_expr *out, tsl_diag *d)
{
    rt_xins buf[RT_EXPR_MAX];
    int n = 0;
    if (!def || s < 0 || s >= def->nstmts || v < 0 || v >= def->stmts[s].nvars ||
        !pb_sexpr(def->stmts[s].vars[v].range.hi, buf, &n, RT_EXPR_MAX)) {
        diag_error(d, TSL_ERR_INTERNAL, "internal: a launch argument's rows are not an expression of the sizes");
        return TSL_ERR_INTERNAL;
    }
    out->n = n;
    out->ins = arena_alloc(a, sizeof *out->ins * (size_t)n);
    memcpy(out->ins, buf, sizeof *out->ins * (size_t)n);
    return TSL_OK;
}

/* A launch's guard (sched.h) as an expression over the program's sizes:
 * the conjunction of its when terms and of each unless group's negated
 * conjunction. */
static tsl_status pb_guard(const sched_guard *g, tsl_arena *a, rt_expr *out, tsl_diag *d)
{
    if (g->n > SCHED_MAX_GUARD) {
        diag_error(d, TSL_ERR_INTERNAL, "internal: a launch guard has %d terms", g->n);
        return TSL_ERR_INTERNAL;
    }
    rt_xins buf[8 * SCHED_MAX_GUARD + 2];
    int n = 0, groups = 0;
    for (int u = 0; u <= sched_guard_nunless(g); u++) {
        int terms = 0;
        for (int i = 0; i < g->n; i++) {
            if (g->grp[i] != u) continue;
            buf[n++] = (rt_xins){RT_X_VAL, g->sym[i]};
            if (g->op[i] == SCHED_GUARD_MOD) {
                buf[n++] = (rt_xins){RT_X_CONST, g->val[i]};
                buf[n++] = (rt_xins){RT_X_MOD, 0};
                buf[n++] = (rt_xins){RT_X_CONST, 0};
                buf[n++] = (rt_xins){RT_X_EQ, 0};
            } else if (g->op[i] == SCHED_GUARD_NE) {
                buf[n++] = (rt_xins){RT_X_CONST, g->val[i]};
                buf[n++] = (rt_xins){RT_X_EQ, 0};
                buf[n++] = (rt_xins){RT_X_NOT, 0};
            } else {
                buf[n++] = (rt_xins){RT_X_CONST, g->val[i]};
                buf[n++] = (rt_xins){g->op[i] == SCHED_GUARD_LE ? RT_X_LE : RT_X_GT, 0};
            }
            if (terms++) buf[n++] = (rt_xins){RT_X_AND, 0};
        }
        if (!terms) continue;
        if (u) buf[n++] = (rt_xins){RT_X_NOT, 0};
        if (groups++) buf[n++] = (rt_xins){RT_X_AND, 0};
    }
    out->n = n;
    out->ins = arena_alloc(a, sizeof *out->ins * (size_t)n);
    memcpy(out->ins, buf, sizeof *out->ins * (size_t)n);
    return TSL_OK;
}

tsl_status drv_plan_build(const lang_def *def, const sched_plan *sp, const tile_kernel *const *kern,
                          const tile_module *m, const drv_target *t, const sched_options *o, tsl_arena *a, rt_plan *p,
                          strbuf *sources, tsl_diag *d)
{
    tsl_arena *pa = p->arena;
    if (def) {
        p->ntensors = def->ntensors;
        p->tensors = arena_alloc(pa, sizeof *p->tensors * (size_t)(def->ntensors + 1));
        for (int i = 0; i < def->ntensors; i++) {
            const lang_tensor *lt = def->tensors[i];
            rt_tensor *rt = &p->tensors[i];
            rt->name = arena_strdup(pa, lt->name);
            /* a low-bit tensor crosses into kernels packed (a pure input)
             * or as its carrier (sched/lowbit.c) */
            rt->dtype = lt->is_scalar ? lt->dtype : sched_tensor_boundary_dtype(lt);
            rt->rank = lt->is_scalar ? 0 : lt->rank;
            rt->flags = (lt->is_scalar ? RT_T_SCALAR : 0) | (lt->flags & LANG_TENSOR_INPUT ? RT_T_INPUT : 0) |
                        (lt->flags & LANG_TENSOR_OUTPUT ? RT_T_OUTPUT : 0) |
                        (lt->flags & LANG_TENSOR_TEMP ? RT_T_TEMP : 0);
        }
        p->nsizes = def->nsizes;
        p->nstmts = def->nstmts;
    } else {
        /* one hand-written kernel: its parameters are the tensors, each
         * read and (maybe) written */
        const tile_kernel *k = sp->launches[0].k;
        p->ntensors = k->nparams;
        p->tensors = arena_alloc(pa, sizeof *p->tensors * (size_t)(k->nparams + 1));
        for (int i = 0; i < k->nparams; i++) {
            const tile_value *v = k->params[i];
            rt_tensor *rt = &p->tensors[i];
            tsl_dtype dt = TSL_DTYPE_I64;
            rt->name = arena_strdup(pa, v->name);
            if (v->kind == TILE_V_TENSOR && tile_dtype_to_tsl(v->type.dt, &dt)) dt = TSL_DTYPE_U8;
            rt->dtype = dt;
            rt->rank = v->kind == TILE_V_TENSOR ? v->type.rank : 0;
            rt->flags = v->kind == TILE_V_TENSOR ? RT_T_INPUT | RT_T_OUTPUT : RT_T_SCALAR;
        }
        p->nstmts = 1;
    }
    int nl = sp->nlaunches;
    p->kernels = arena_alloc(pa, sizeof *p->kernels * (size_t)(nl + 1));
    p->launches = arena_alloc(pa, sizeof *p->launches * (size_t)(nl + 1));
    int *of = arena_alloc(a, sizeof *of * (size_t)(nl + 1)); /* launch -> plan kernel */
    const char **src = arena_alloc(a, sizeof *src * (size_t)(nl + 1));
    tsl_status st = TSL_OK;
    for (int li = 0; li < nl && !st; li++) {
        of[li] = -1;
        for (int j = 0; j < li && of[li] < 0; j++)
            if (kern[j] == kern[li]) of[li] = of[j];
        if (of[li] < 0) {
            strbuf text = {0};
            drv_emitted em = {0};
            st = t->emit(m, kern[li], o, a, &text, &em, d);
            if (!st) {
                of[li] = p->nkernels++;
                src[of[li]] = arena_strdup(a, sb_str(&text));
                st = pb_kernel(kern[li], &em, src[of[li]], p, &p->kernels[of[li]], d);
            }
            sb_free(&text);
        }
        if (st) break;
        if (li) sb_putc(sources, '\n');
        sb_puts(sources, src[of[li]]);
        const sched_launch *sl = &sp->launches[li];
        const tile_kernel *k = kern[li];
        rt_launch *l = &p->launches[li];
        l->kernel = of[li];
        l->stmt = sl->stmt;
        if (sl->guard.n) st = pb_guard(&sl->guard, pa, &l->when, d);
        l->args = arena_alloc(pa, sizeof *l->args * (size_t)(k->nparams + 1));
        for (int q = 0; q < k->nparams && !st; q++) {
            const sched_arg *sa = NULL;
            for (int j = 0; j < sl->nargs && !sa; j++)
                if (!strcmp(sl->args[j].name, k->params[q]->name)) sa = &sl->args[j];
            if (!sa) {
                diag_error(d, TSL_ERR_INTERNAL, "kernel '%s': parameter '%s' is not in the plan", k->name,
                           k->params[q]->name);
                st = TSL_ERR_INTERNAL;
                break;
            }
            rt_arg *ra = &l->args[q];
            static const int kinds[] = {[SCHED_ARG_TENSOR] = RT_ARG_TENSOR, [SCHED_ARG_SCALAR] = RT_ARG_SCALAR,
                                        [SCHED_ARG_SIZE] = RT_ARG_SIZE, [SCHED_ARG_SMS] = RT_ARG_UNITS,
                                        [SCHED_ARG_SCRATCH] = RT_ARG_SCRATCH};
            ra->kind = kinds[sa->kind];
            ra->index = sa->kind == SCHED_ARG_SIZE      ? sa->sym
                        : sa->kind == SCHED_ARG_SCRATCH ? sa->scratch
                        : sa->kind == SCHED_ARG_SMS     ? 0
                                                        : sa->tensor;
            ra->flat = sa->flat;
            ra->bytes = sa->bytes;
            if (sa->rows) st = pb_rows(def, sl->stmt, sa->rows - 1, pa, &ra->rows, d);
            if (st) break;
            const rt_param *rp = &p->kernels[of[li]].params[q];
            int tensor_arg = ra->kind == RT_ARG_TENSOR || ra->kind == RT_ARG_SCRATCH;
            int rank = ra->kind == RT_ARG_SCRATCH || ra->flat ? 1 : tensor_arg ? p->tensors[ra->index].rank : 0;
            if (rp->is_tensor != tensor_arg || (tensor_arg && rp->rank != rank)) {
                diag_error(d, TSL_ERR_INTERNAL, "kernel '%s': parameter '%s' does not match its plan argument",
                           k->name, k->params[q]->name);
                st = TSL_ERR_INTERNAL;
            }
        }
    }
    p->nlaunches = st ? 0 : nl;
    p->nscratch = sp->nscratch;
    p->scratch = arena_alloc(pa, sizeof *p->scratch * (size_t)(sp->nscratch + 1));
    for (int i = 0; i < sp->nscratch; i++) p->scratch[i] = (rt_scratch){sp->scratch[i].dtype, sp->scratch[i].count};
    return st;
}
