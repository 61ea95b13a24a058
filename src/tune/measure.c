/* measure.c — timing a prepared executable the way the benchmarks and
 * the tuner do (tune.h): tensors resident on the device, input sets
 * rotated so that together they pass twice the last-level cache (a run
 * never finds its inputs warm from the run before), warm-up first, then
 * whole plan runs (every launch, temporaries zeroed) timed one by one with
 * the device's events, or the monotonic clock on the CPU; the median. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune/tune.h"

struct tune_bufs {
    const rt_target *rt; /* where the buffers live: not the executable, */
    void *dev;           /* which a worker frees while keeping the buffers */
    int nsets, n;
    int next;        /* the set the next run takes: runs rotate on across calls */
    rt_ptr **ptr;    /* [nsets][ntensors] */
    int *owned;      /* [ntensors]: inputs get one buffer per set; the rest set 0's */
    double *scalars; /* [ntensors] */
};

size_t tune_llc_bytes(const rt_target *t)
{
    if (!t->host_memory) return (size_t)64 << 20; /* an H100/H200's L2 is 50-60 MB */
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) return (size_t)l3;
    size_t n = 0;
    char *s = file_read_all("/sys/devices/system/cpu/cpu0/cache/index3/size", &n);
    long v = s ? strtol(s, NULL, 10) : 0;
    int mb = s && strchr(s, 'M') != NULL;
    free(s);
    return v > 0 ? (size_t)v << (mb ? 20 : 10) : (size_t)32 << 20;
}

static size_t host_bytes(const tune_case *c, int i)
{
    const lang_tensor *t = c->def->tensors[i];
    int64_t n = 1;
    for (int k = 0; k < t->rank; k++) n *= c->b->shapes[i][k];
    return tsl_dtype_nbytes(c->views[i].dtype, n);
}

/* A view's elements into a C-order buffer (its bytes when it is in C
 * order already: W of a quantized GEMV, 470 MB, took seconds element by
 * element, for every candidate the tuner timed). */
static void dense_copy(const interp_tensor *v, char *out)
{
    int64_t n = 1, idx[TSL_MAX_RANK] = {0}, want = 1;
    int dense = 1;
    for (int k = v->rank - 1; k >= 0; k--) {
        dense &= v->shape[k] == 1 || v->stride[k] == want;
        want *= v->shape[k];
    }
    for (int k = 0; k < v->rank; k++) n *= v->shape[k];
    if (dense) {
        memcpy(out, v->base, tsl_dtype_nbytes(v->dtype, n));
        return;
    }
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int k = 0; k < v->rank; k++) off += idx[k] * v->stride[k];
        dtype_set(v->dtype, out, e, dtype_get(v->dtype, v->base, off));
        for (int k = v->rank - 1; k >= 0; k--) {
            if (++idx[k] < v->shape[k]) break;
            idx[k] = 0;
        }
    }
}

tsl_status tune_bufs_create(rt_exec *e, const tune_case *c, size_t max_bytes, tune_bufs **out, tsl_diag *d)
{
    *out = NULL;
    const lang_def *def = c->def;
    const rt_target *rt = rt_exec_target(e);
    void *dev = rt_exec_device(e);
    int n = def->ntensors;
    size_t in_bytes = 0, all_bytes = 0;
    for (int i = 0; i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || (t->flags & LANG_TENSOR_TEMP)) continue;
        all_bytes += host_bytes(c, i);
        if (!(t->flags & LANG_TENSOR_OUTPUT)) in_bytes += host_bytes(c, i);
    }
    size_t want = 2 * tune_llc_bytes(rt);
    int nsets = in_bytes ? (int)((want + in_bytes - 1) / in_bytes) : 1;
    if (nsets < 1) nsets = 1;
    if (nsets > 64) nsets = 64;
    while (nsets > 1 && all_bytes + (size_t)(nsets - 1) * in_bytes > max_bytes) nsets--;
    tune_bufs *t = calloc(1, sizeof *t);
    tsl_status st = t ? TSL_OK : TSL_ERR_NOMEM;
    if (t) {
        t->rt = rt;
        t->dev = dev;
        t->nsets = nsets;
        t->n = n;
        t->ptr = calloc((size_t)nsets, sizeof *t->ptr);
        t->owned = calloc((size_t)n + 1, sizeof *t->owned);
        t->scalars = calloc((size_t)n + 1, sizeof *t->scalars);
        st = t->ptr && t->owned && t->scalars ? TSL_OK : TSL_ERR_NOMEM;
        for (int s = 0; !st && s < nsets; s++)
            if (!(t->ptr[s] = calloc((size_t)n + 1, sizeof **t->ptr))) st = TSL_ERR_NOMEM;
    }
    if (st) diag_error(d, st, "out of memory");
    char *host = NULL;
    for (int i = 0; !st && i < n; i++) {
        const lang_tensor *tt = def->tensors[i];
        if (tt->is_scalar) {
            t->scalars[i] = c->views[i].scalar;
            continue;
        }
        if (tt->flags & LANG_TENSOR_TEMP) continue;
        size_t bytes = host_bytes(c, i);
        int per_set = !(tt->flags & LANG_TENSOR_OUTPUT);
        free(host);
        host = malloc(bytes ? bytes : 1);
        if (!host) {
            diag_error(d, TSL_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
            st = TSL_ERR_NOMEM;
            break;
        }
        dense_copy(&c->views[i], host);
        for (int s = 0; !st && s < (per_set ? nsets : 1); s++) {
            st = rt->alloc(dev, bytes ? bytes : 1, &t->ptr[s][i], d);
            if (st) diag_error(d, st, "device memory for '%s' (%zu bytes, input set %d)", tt->name, bytes, s);
            if (!st && bytes) st = rt->copy(dev, t->ptr[s][i], (rt_ptr)(uintptr_t)host, bytes, RT_COPY_HTOD, d);
        }
        for (int s = per_set ? nsets : 1; !st && s < nsets; s++) t->ptr[s][i] = t->ptr[0][i];
        t->owned[i] = per_set ? nsets : 1;
    }
    free(host);
    if (st) {
        tune_bufs_free(t);
        return st;
    }
    *out = t;
    return TSL_OK;
}

void tune_bufs_free(tune_bufs *t)
{
    if (!t) return;
    for (int i = 0; t->ptr && t->owned && i < t->n; i++)
        for (int s = 0; s < t->owned[i]; s++)
            if (t->ptr[s] && t->ptr[s][i]) t->rt->free(t->dev, t->ptr[s][i]);
    for (int s = 0; t->ptr && s < t->nsets; s++) free(t->ptr[s]);
    free(t->ptr);
    free(t->owned);
    free(t->scalars);
    free(t);
}

int tune_bufs_sets(const tune_bufs *t) { return t->nsets; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void tune_timing_of(double *ms, int n, tune_timing *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0) return;
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    out->reps = n;
    out->median_ms = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    out->p10_ms = ms[n / 10];
    out->p90_ms = ms[n - 1 - n / 10];
    out->min_ms = ms[0];
}

tsl_status tune_time_runs(rt_exec *e, tune_bufs *t, const tune_case *c, double budget_ms, int min_reps, int max_reps,
                          double *ms, int *n, tsl_diag *d)
{
    const rt_target *rt = rt_exec_target(e);
    void *dev = rt_exec_device(e), *e0 = NULL, *e1 = NULL;
    *n = 0;
    if (max_reps < 1) max_reps = 1;
    if (min_reps > max_reps) min_reps = max_reps;
    tsl_status st = rt->event_create(dev, &e0, d);
    if (!st) st = rt->event_create(dev, &e1, d);
    /* warm-up: the first runs compile lazy variants and fault pages in */
    double warm = 0;
    for (int w = 0; !st && w < 3 && (w < 1 || warm < budget_ms / 10); w++) {
        double one = 0;
        st = rt->event_record(dev, e0, d);
        if (!st) st = drv_run_device(e, c->b, t->ptr[t->next++ % t->nsets], t->scalars, 0, d);
        if (!st) st = rt->event_record(dev, e1, d);
        if (!st) st = rt->event_elapsed(dev, e0, e1, &one, d);
        warm += one;
    }
    double total = 0;
    int r = 0;
    for (; !st && r < max_reps && (r < min_reps || total < budget_ms); r++) {
        st = rt->event_record(dev, e0, d);
        if (!st) st = drv_run_device(e, c->b, t->ptr[t->next++ % t->nsets], t->scalars, 0, d);
        if (!st) st = rt->event_record(dev, e1, d);
        if (!st) st = rt->event_elapsed(dev, e0, e1, &ms[r], d);
        total += ms[r];
    }
    if (!st) st = rt->sync(dev, d);
    t->next %= t->nsets;
    if (!st) *n = r;
    if (e0) rt->event_destroy(dev, e0);
    if (e1) rt->event_destroy(dev, e1);
    return st;
}

tsl_status tune_time(rt_exec *e, tune_bufs *t, const tune_case *c, double budget_ms, int min_reps, int max_reps,
                     tune_timing *out, tsl_diag *d)
{
    memset(out, 0, sizeof *out);
    if (max_reps < 1) max_reps = 1;
    double *ms = calloc((size_t)max_reps + 1, sizeof *ms);
    if (!ms) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    int n = 0;
    tsl_status st = tune_time_runs(e, t, c, budget_ms, min_reps, max_reps, ms, &n, d);
    if (!st) tune_timing_of(ms, n, out);
    free(ms);
    return st;
}
