/* plan_io.c — an rt_plan as bytes (what the cache stores) and back, and
 * as text for people.
 *
 * Format: the magic "TSLPLAN6" (bumped with every change of layout), then
 * every field in a fixed order as
 * little-endian i64 (counts, enums and values alike) or length-prefixed
 * bytes (strings, binaries). The reader trusts nothing: every count has a
 * bound, every index is checked against what it indexes, every expression
 * against its environment, so a blob damaged in any way is TSL_ERR_IO with
 * a message, never a crash or a plan that reads out of bounds. */
#include <stdio.h>
#include <string.h>

#include "runtime/plan.h"

static const char plan_magic[8] = {'T', 'S', 'L', 'P', 'L', 'A', 'N', '6'};

/* ---- writing ---------------------------------------------------------------- */

static void w_i64(strbuf *o, int64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    sb_putn(o, (const char *)b, 8);
}

static void w_bytes(strbuf *o, const void *p, size_t n)
{
    w_i64(o, (int64_t)n);
    if (n) sb_putn(o, p, n);
}

static void w_str(strbuf *o, const char *s) { w_bytes(o, s ? s : "", s ? strlen(s) : 0); }

static void w_expr(strbuf *o, const rt_expr *e)
{
    w_i64(o, e->n);
    for (int i = 0; i < e->n; i++) {
        w_i64(o, e->ins[i].op);
        w_i64(o, e->ins[i].v);
    }
}

void rt_plan_write(strbuf *o, const rt_plan *p)
{
    sb_putn(o, plan_magic, sizeof plan_magic);
    w_i64(o, p->ntensors);
    for (int i = 0; i < p->ntensors; i++) {
        const rt_tensor *t = &p->tensors[i];
        w_str(o, t->name);
        w_i64(o, t->dtype);
        w_i64(o, t->rank);
        w_i64(o, t->flags);
    }
    w_i64(o, p->nsizes);
    w_i64(o, p->nstmts);
    w_i64(o, p->nkernels);
    for (int ki = 0; ki < p->nkernels; ki++) {
        const rt_kernel *k = &p->kernels[ki];
        w_str(o, k->name);
        w_str(o, k->entry);
        w_str(o, k->source);
        w_i64(o, k->threads);
        w_i64(o, k->cluster);
        w_i64(o, k->smem);
        w_i64(o, k->nparams);
        for (int q = 0; q < k->nparams; q++) {
            const rt_param *pa = &k->params[q];
            w_str(o, pa->name);
            w_i64(o, pa->is_tensor);
            w_i64(o, pa->is_float);
            w_i64(o, pa->dtype + 1); /* -1: no host dtype */
            w_i64(o, pa->rank);
            for (int i = 0; pa->is_tensor && i < pa->rank; i++) w_expr(o, &pa->dims[i]);
        }
        w_i64(o, k->nsyms);
        for (int s = 0; s < k->nsyms; s++) {
            w_str(o, k->sym_names[s]);
            w_i64(o, k->sym_param[s]);
            w_i64(o, k->sym_dim[s]);
        }
        w_i64(o, k->ngrid);
        for (int i = 0; i < k->ngrid; i++) w_expr(o, &k->grid[i]);
        w_i64(o, k->nbranches);
        for (int i = 0; i < k->nbranches; i++) w_expr(o, &k->branches[i]);
        w_i64(o, k->nerrs);
        for (int i = 0; i < k->nerrs; i++) {
            w_i64(o, k->errs[i].st);
            w_str(o, k->errs[i].msg);
            w_str(o, k->errs[i].where);
            w_i64(o, k->errs[i].info);
        }
        w_i64(o, k->ntmaps);
        for (int i = 0; i < k->ntmaps; i++) {
            const rt_tmap *m = &k->tmaps[i];
            w_i64(o, m->param);
            w_i64(o, m->rank);
            for (int j = 0; j < 5; j++) w_i64(o, m->box[j]);
            w_i64(o, m->swizzle);
            w_i64(o, m->guarded);
        }
        w_i64(o, k->nbins);
        for (int i = 0; i < k->nbins; i++) {
            w_i64(o, k->bins[i].variant);
            w_bytes(o, k->bins[i].data, k->bins[i].size);
        }
    }
    w_i64(o, p->nscratch);
    for (int i = 0; i < p->nscratch; i++) {
        w_i64(o, p->scratch[i].dtype);
        w_i64(o, p->scratch[i].count);
    }
    w_i64(o, p->nlaunches);
    for (int li = 0; li < p->nlaunches; li++) {
        const rt_launch *l = &p->launches[li];
        w_i64(o, l->kernel);
        w_i64(o, l->stmt);
        w_expr(o, &l->when);
        int na = p->kernels[l->kernel].nparams;
        for (int j = 0; j < na; j++) {
            w_i64(o, l->args[j].kind);
            w_i64(o, l->args[j].index);
            w_i64(o, l->args[j].flat | l->args[j].bytes << 1);
            w_expr(o, &l->args[j].rows);
        }
    }
}

/* ---- reading ---------------------------------------------------------------- */

typedef struct rd {
    const unsigned char *p;
    size_t n, at;
    tsl_arena *a;
    const char *bad; /* first problem found */
} rd;

static int64_t r_i64(rd *r)
{
    if (r->bad) return 0;
    if (r->n - r->at < 8) {
        r->bad = "it ends early";
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)r->p[r->at + (size_t)i] << (8 * i);
    r->at += 8;
    return (int64_t)v;
}

/* A count in [0, max]. */
static int r_count(rd *r, int64_t max, const char *what)
{
    int64_t v = r_i64(r);
    if (!r->bad && (v < 0 || v > max)) r->bad = what;
    return r->bad ? 0 : (int)v;
}

static void *r_bytes(rd *r, size_t *len, int nul)
{
    int64_t n = r_i64(r);
    if (r->bad) return NULL;
    if (n < 0 || (uint64_t)n > r->n - r->at) {
        r->bad = "a length runs past its end";
        return NULL;
    }
    char *s = arena_alloc(r->a, (size_t)n + (nul ? 1 : 0) + 1);
    memcpy(s, r->p + r->at, (size_t)n);
    r->at += (size_t)n;
    if (nul && memchr(s, 0, (size_t)n)) r->bad = "a string holds a NUL byte";
    if (len) *len = (size_t)n;
    return s;
}

static char *r_str(rd *r) { return r_bytes(r, NULL, 1); }

/* An expression over nvals environment slots that leaves one value (or,
 * with empty_ok, no instruction at all). */
static void r_expr_opt(rd *r, rt_expr *e, int nvals, int empty_ok)
{
    e->n = r_count(r, RT_EXPR_MAX, "an expression is too long");
    e->ins = arena_alloc(r->a, sizeof *e->ins * (size_t)(e->n + 1));
    int depth = 0;
    for (int i = 0; i < e->n && !r->bad; i++) {
        int64_t op = r_i64(r), v = r_i64(r);
        if (op < 0 || op >= RT_X_COUNT || (op == RT_X_VAL && (v < 0 || v >= nvals))) {
            r->bad = "an expression has a bad operation";
            return;
        }
        e->ins[i].op = (int32_t)op;
        e->ins[i].v = v;
        depth += op == RT_X_CONST || op == RT_X_VAL ? 1 : op == RT_X_NEG || op == RT_X_NOT ? 0 : -1;
        if (depth < 1) r->bad = "an expression underflows";
    }
    if (!r->bad && depth != 1 && !(empty_ok && e->n == 0)) r->bad = "an expression does not leave one value";
}

static void r_expr(rd *r, rt_expr *e, int nvals) { r_expr_opt(r, e, nvals, 0); }

static void r_kernel(rd *r, rt_kernel *k)
{
    k->name = r_str(r);
    k->entry = r_str(r);
    k->source = r_str(r);
    k->threads = r_count(r, 1 << 20, "a thread count is out of range");
    k->cluster = r_count(r, 8, "a cluster size is out of range");
    k->smem = r_count(r, (int64_t)1 << 40, "a shared size is out of range");
    k->nparams = r_count(r, RT_MAX_PARAMS, "a kernel has too many parameters");
    k->params = arena_alloc(r->a, sizeof *k->params * (size_t)(k->nparams + 1));
    int64_t nsyms_guess = RT_MAX_PARAMS; /* dims may read any symbol: checked below */
    for (int q = 0; q < k->nparams && !r->bad; q++) {
        rt_param *pa = &k->params[q];
        pa->name = r_str(r);
        pa->is_tensor = r_count(r, 1, "a parameter kind is bad");
        pa->is_float = r_count(r, 1, "a parameter kind is bad");
        pa->dtype = r_count(r, TSL_DTYPE_COUNT, "a dtype is unknown") - 1;
        pa->rank = r_count(r, RT_MAX_RANK, "a rank is out of range");
        pa->dims = arena_alloc(r->a, sizeof *pa->dims * (size_t)(pa->rank + 1));
        for (int i = 0; pa->is_tensor && i < pa->rank; i++) r_expr(r, &pa->dims[i], (int)nsyms_guess + k->nparams);
    }
    k->nsyms = r_count(r, RT_MAX_PARAMS, "a kernel has too many size symbols");
    k->sym_names = arena_alloc(r->a, sizeof *k->sym_names * (size_t)(k->nsyms + 1));
    k->sym_param = arena_alloc(r->a, sizeof *k->sym_param * (size_t)(k->nsyms + 1));
    k->sym_dim = arena_alloc(r->a, sizeof *k->sym_dim * (size_t)(k->nsyms + 1));
    for (int s = 0; s < k->nsyms && !r->bad; s++) {
        k->sym_names[s] = r_str(r);
        k->sym_param[s] = r_count(r, k->nparams - 1, "a size symbol binds to no parameter");
        k->sym_dim[s] = r_count(r, RT_MAX_RANK - 1, "a size symbol binds to no dim");
        const rt_param *pa = r->bad ? NULL : &k->params[k->sym_param[s]];
        if (pa && (!pa->is_tensor || k->sym_dim[s] >= pa->rank)) r->bad = "a size symbol binds to no dim";
    }
    int nv = k->nsyms + k->nparams;
    /* the dims were read against a generous bound; hold them to the real one */
    for (int q = 0; q < k->nparams && !r->bad; q++)
        for (int i = 0; k->params[q].is_tensor && i < k->params[q].rank; i++)
            for (int j = 0; j < k->params[q].dims[i].n; j++)
                if (k->params[q].dims[i].ins[j].op == RT_X_VAL && k->params[q].dims[i].ins[j].v >= nv)
                    r->bad = "a dim reads a missing value";
    k->ngrid = r_count(r, 3, "a grid has more than 3 dims");
    for (int i = 0; i < k->ngrid; i++) r_expr(r, &k->grid[i], nv);
    k->nbranches = r_count(r, 30, "a kernel has too many size branches");
    k->branches = arena_alloc(r->a, sizeof *k->branches * (size_t)(k->nbranches + 1));
    for (int i = 0; i < k->nbranches; i++) r_expr(r, &k->branches[i], nv);
    k->nerrs = r_count(r, 1 << 16, "a kernel has too many error messages");
    k->errs = arena_alloc(r->a, sizeof *k->errs * (size_t)(k->nerrs + 1));
    for (int i = 0; i < k->nerrs && !r->bad; i++) {
        k->errs[i].st = r_count(r, TSL_ERR_INTERNAL, "an error status is unknown");
        k->errs[i].msg = r_str(r);
        k->errs[i].where = r_str(r);
        k->errs[i].info = r_count(r, 1, "an error kind is bad");
        /* a message with info is a format: it may hold two %lld and no other conversion */
        const char *m = k->errs[i].msg;
        int conv = 0;
        for (const char *c = m; c && *c && !r->bad; c++) {
            if (*c != '%') continue;
            if (c[1] == '%') {
                c++;
                continue;
            }
            if (!k->errs[i].info || strncmp(c, "%lld", 4) || ++conv > 2) r->bad = "an error message is not a safe format";
            c += 3;
        }
    }
    k->ntmaps = r_count(r, RT_MAX_TMAPS, "a kernel has too many tensor maps");
    k->tmaps = arena_alloc(r->a, sizeof *k->tmaps * (size_t)(k->ntmaps + 1));
    for (int i = 0; i < k->ntmaps && !r->bad; i++) {
        rt_tmap *m = &k->tmaps[i];
        m->param = r_count(r, k->nparams - 1, "a tensor map names no parameter");
        m->rank = r_count(r, 5, "a tensor map's rank is out of range");
        for (int j = 0; j < 5; j++) m->box[j] = r_count(r, 256, "a tensor map's box is out of range");
        m->swizzle = r_count(r, 128, "a tensor map's swizzle is out of range");
        m->guarded = r_count(r, 1, "a tensor map's guard flag is out of range");
        if (!r->bad && (!k->params[m->param].is_tensor || m->rank < 1 || m->rank > k->params[m->param].rank))
            r->bad = "a tensor map does not fit its parameter";
    }
    k->nbins = r_count(r, 64, "a kernel has too many binaries");
    k->bins = arena_alloc(r->a, sizeof *k->bins * (size_t)(k->nbins + 1));
    for (int i = 0; i < k->nbins && !r->bad; i++) {
        k->bins[i].variant = (unsigned)r_count(r, INT32_MAX, "a variant is out of range");
        k->bins[i].data = r_bytes(r, &k->bins[i].size, 0);
    }
}

tsl_status rt_plan_read(const void *data, size_t n, rt_plan **out, tsl_diag *d)
{
    *out = NULL;
    rt_plan *p = rt_plan_create();
    if (!p) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    rd r = {data, n, 0, p->arena, NULL};
    if (n < sizeof plan_magic || memcmp(data, plan_magic, sizeof plan_magic)) r.bad = "it is not a tessel plan";
    r.at = sizeof plan_magic;
    p->ntensors = r_count(&r, 1 << 16, "too many tensors");
    p->tensors = arena_alloc(p->arena, sizeof *p->tensors * (size_t)(p->ntensors + 1));
    for (int i = 0; i < p->ntensors && !r.bad; i++) {
        rt_tensor *t = &p->tensors[i];
        t->name = r_str(&r);
        t->dtype = r_count(&r, TSL_DTYPE_COUNT - 1, "a dtype is unknown");
        t->rank = r_count(&r, RT_MAX_RANK, "a rank is out of range");
        t->flags = r_count(&r, 15, "a tensor kind is bad");
    }
    p->nsizes = r_count(&r, 1 << 16, "too many sizes");
    p->nstmts = r_count(&r, 1 << 16, "too many statements");
    p->nkernels = r_count(&r, 1 << 16, "too many kernels");
    p->kernels = arena_alloc(p->arena, sizeof *p->kernels * (size_t)(p->nkernels + 1));
    for (int ki = 0; ki < p->nkernels && !r.bad; ki++) r_kernel(&r, &p->kernels[ki]);
    p->nscratch = r_count(&r, 1 << 10, "too many scratch buffers");
    p->scratch = arena_alloc(p->arena, sizeof *p->scratch * (size_t)(p->nscratch + 1));
    for (int i = 0; i < p->nscratch && !r.bad; i++) {
        p->scratch[i].dtype = r_count(&r, TSL_DTYPE_COUNT - 1, "a dtype is unknown");
        p->scratch[i].count = r_count(&r, (int64_t)1 << 40, "a scratch buffer is too large");
    }
    p->nlaunches = r_count(&r, 1 << 16, "too many launches");
    p->launches = arena_alloc(p->arena, sizeof *p->launches * (size_t)(p->nlaunches + 1));
    for (int li = 0; li < p->nlaunches && !r.bad; li++) {
        rt_launch *l = &p->launches[li];
        l->kernel = r_count(&r, p->nkernels - 1, "a launch names no kernel");
        l->stmt = r_count(&r, p->nstmts - 1, "a launch names no statement");
        r_expr_opt(&r, &l->when, p->nsizes, 1); /* the guard: empty, or over the sizes */
        if (r.bad) break;
        const rt_kernel *k = &p->kernels[l->kernel];
        l->args = arena_alloc(p->arena, sizeof *l->args * (size_t)(k->nparams + 1));
        for (int j = 0; j < k->nparams && !r.bad; j++) {
            rt_arg *a = &l->args[j];
            const rt_param *pa = &k->params[j];
            a->kind = r_count(&r, RT_ARG_UNITS, "an argument kind is bad");
            a->index = r_count(&r, 1 << 16, "an argument index is bad");
            int fl = (int)r_count(&r, 3, "an argument kind is bad");
            a->flat = fl & 1;
            a->bytes = fl >> 1;
            r_expr_opt(&r, &a->rows, p->nsizes, 1);
            if (r.bad) break;
            const rt_tensor *t =
                (a->kind == RT_ARG_TENSOR || a->kind == RT_ARG_SCALAR) && a->index < p->ntensors ? &p->tensors[a->index]
                                                                                              : NULL;
            int ok = pa->is_tensor ? (a->kind == RT_ARG_TENSOR && t && !(t->flags & RT_T_SCALAR) &&
                                      (a->flat ? pa->rank == 1 : pa->rank == t->rank) &&
                                      (!a->bytes || (!a->flat && tsl_dtype_bits((tsl_dtype)t->dtype) <= 8))) ||
                                         (a->kind == RT_ARG_SCRATCH && a->index < p->nscratch && pa->rank == 1)
                   : a->kind == RT_ARG_SCALAR ? t && (t->flags & RT_T_SCALAR)
                   : a->kind == RT_ARG_SIZE   ? a->index < p->nsizes
                                              : a->kind == RT_ARG_UNITS;
            if (ok && !pa->is_tensor && (a->bytes || a->rows.n)) ok = 0;
            if (!ok) r.bad = "an argument does not match its parameter";
        }
    }
    if (!r.bad && r.at != n) r.bad = "bytes follow its end";
    if (r.bad) {
        diag_error(d, TSL_ERR_IO, "a cached launch plan is damaged: %s (byte %zu of %zu)", r.bad, r.at, n);
        rt_plan_free(p);
        return TSL_ERR_IO;
    }
    *out = p;
    return TSL_OK;
}

/* ---- text -------------------------------------------------------------------- */

void rt_plan_describe(strbuf *o, const rt_plan *p)
{
    sb_printf(o, "%d kernel%s, %d launch%s\n", p->nkernels, p->nkernels == 1 ? "" : "s", p->nlaunches,
              p->nlaunches == 1 ? "" : "es");
    for (int ki = 0; ki < p->nkernels; ki++) {
        const rt_kernel *k = &p->kernels[ki];
        char cl[32] = "";
        if (k->cluster > 1) snprintf(cl, sizeof cl, " in clusters of %d", k->cluster);
        sb_printf(o, "  kernel %s: entry %s, %d threads%s, %lld shared bytes, %d params, %d size branch%s, "
                     "%d tensor map%s, %zu bytes of source, %d binar%s\n",
                  k->name, k->entry, k->threads, cl, (long long)k->smem, k->nparams, k->nbranches,
                  k->nbranches == 1 ? "" : "es", k->ntmaps, k->ntmaps == 1 ? "" : "s", strlen(k->source), k->nbins,
                  k->nbins == 1 ? "y" : "ies");
    }
    for (int li = 0; li < p->nlaunches; li++) {
        const rt_launch *l = &p->launches[li];
        const rt_kernel *k = &p->kernels[l->kernel];
        sb_printf(o, "  launch %d: %s (statement %d%s)", li, k->name, l->stmt, l->when.n ? ", guarded by the sizes" : "");
        for (int j = 0; j < k->nparams; j++) {
            const rt_arg *a = &l->args[j];
            sb_printf(o, "%s %s=", j ? "," : ";", k->params[j].name);
            if (a->kind == RT_ARG_SIZE) sb_printf(o, "size %d", a->index);
            else if (a->kind == RT_ARG_SCRATCH) sb_printf(o, "scratch %d", a->index);
            else if (a->kind == RT_ARG_UNITS) sb_puts(o, "multiprocessors");
            else sb_printf(o, "%s%s%s", a->kind == RT_ARG_SCALAR ? "scalar " : "", p->tensors[a->index].name,
                           a->flat ? " (flat)" : a->bytes ? " (bytes)" : "");
        }
        sb_putc(o, '\n');
    }
}
