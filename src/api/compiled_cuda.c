/* compiled_cuda.c — the CUDA path of tsl_program_run (TSL_TARGET_CUDA).
 *
 * op graph -> sched_lower (tile module + launch plan, verified) -> open the
 * device ($TESSEL_CUDA_DEVICE, default 0) -> every kernel generated and
 * compiled by NVRTC for the device's own arch (sm_90a on Hopper; the
 * runtime caches cubins on disk, so a second run compiles nothing) ->
 * device buffers for every parameter and output, each copied in once
 * (strided host views through a dense host copy; outputs too, so that a
 * caller's in/out data and untouched elements survive as on the CPU
 * targets) -> all launches on device addresses (sched/run_device.c),
 * temporaries on the device -> every output copied back once.
 *
 * No driver or no device: TSL_ERR_UNAVAILABLE with the runtime's message,
 * and nothing else changes (the process stays usable; the other targets
 * still run). A gather index out of range (TSL_ERR_BOUNDS) comes back with
 * the reference interpreter's located message, as on the CPU target. */
#include <pthread.h>
#include <string.h>

#include "api/api.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "sched/run_device.h"
#include "sched/sched.h"

/* Is the view C-contiguous for its shape? */
static int cuda_view_dense(const interp_tensor *v)
{
    int64_t want = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->stride[d] != want) return 0;
        want *= v->shape[d];
    }
    return 1;
}

/* Copy between a strided view and a C-order buffer (to_dense: view -> buf). */
static void cuda_view_copy(const interp_tensor *v, char *buf, int to_dense)
{
    size_t es = tsl_dtype_size(v->dtype);
    int64_t n = 1, idx[TSL_MAX_RANK] = {0};
    for (int d = 0; d < v->rank; d++) n *= v->shape[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < v->rank; d++) off += idx[d] * v->stride[d];
        char *elem = v->base + off * (int64_t)es;
        if (to_dense) memcpy(buf + (size_t)i * es, elem, es);
        else memcpy(elem, buf + (size_t)i * es, es);
        for (int d = v->rank - 1; d >= 0; d--) {
            if (++idx[d] < v->shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* The verified plan of p's def in arena a; NULL after reporting into d. */
static sched_plan *cuda_plan(tsl_program *p, tsl_arena *a, tsl_diag *d)
{
    graph *g = graph_build(a, p->def, d);
    sched_plan *plan = g ? sched_lower(a, g, d) : NULL;
    if (!plan) {
        if (!d->nerr) diag_error(d, TSL_ERR_INTERNAL, "scheduling '%s' failed", p->def->name);
        return NULL;
    }
    if (tile_verify(plan->m, NULL, d) != TSL_OK) {
        diag_error(d, TSL_ERR_INTERNAL, "internal: the schedule of '%s' does not verify", p->def->name);
        return NULL;
    }
    return plan;
}

/* Bytes of def tensor i under b. */
static size_t cuda_tensor_bytes(const lang_def *def, const lang_bound *b, int i)
{
    const lang_tensor *t = def->tensors[i];
    size_t n = 1;
    for (int k = 0; k < t->rank; k++) n *= (size_t)b->shapes[i][k];
    return n * tsl_dtype_size(t->dtype);
}

/* Move def tensor i between host view v and device buffer ptr (bytes). */
static tsl_status cuda_transfer(rt_cuda_device *dev, const interp_tensor *v, rt_cuda_ptr ptr, size_t bytes,
                                int to_device, const char *name, tsl_diag *d)
{
    if (!bytes) return TSL_OK;
    if (cuda_view_dense(v))
        return to_device ? rt_cuda_copy_htod(dev, ptr, v->base, bytes, d)
                         : rt_cuda_copy_dtoh(dev, v->base, ptr, bytes, d);
    char *tmp = malloc(bytes);
    if (!tmp) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory for a dense copy of '%s' (%zu bytes)", name, bytes);
        return TSL_ERR_NOMEM;
    }
    tsl_status st;
    if (to_device) {
        cuda_view_copy(v, tmp, 1);
        st = rt_cuda_copy_htod(dev, ptr, tmp, bytes, d);
    } else {
        st = rt_cuda_copy_dtoh(dev, tmp, ptr, bytes, d);
        if (!st) cuda_view_copy(v, tmp, 0);
    }
    free(tmp);
    return st;
}

/* Replace a kernel's index error with the interpreter's located one. */
static void cuda_locate_bounds_error(const lang_bound *b, const interp_tensor *views, tsl_diag *d)
{
    char *kernel_msg = strdup(sb_str(&d->msg));
    diag_reset(d);
    if (interp_run(b, views, d) == TSL_OK || !d->nerr) {
        const char *m = kernel_msg ? kernel_msg : "index out of range";
        if (!strncmp(m, "error: ", 7)) m += 7;
        size_t len = strlen(m);
        while (len && m[len - 1] == '\n') len--;
        diag_reset(d);
        diag_error(d, TSL_ERR_BOUNDS, "%.*s", (int)len, m);
    }
    free(kernel_msg);
}

/* "target 'cuda' is unavailable: <the runtime's reason>" in place of the
 * runtime's bare message (no driver, no device). */
static void cuda_unavailable(tsl_diag *d)
{
    tsl_status st = d->first ? d->first : TSL_ERR_UNAVAILABLE;
    char *why = strdup(sb_str(&d->msg));
    const char *m = why ? why : "";
    if (!strncmp(m, "error: ", 7)) m += 7;
    size_t len = strlen(m);
    while (len && m[len - 1] == '\n') len--;
    diag_reset(d);
    diag_error(d, st, "target 'cuda' is unavailable: %.*s", (int)len, m);
    free(why);
}

/* The device stays open for the process once a run has opened it: closing
 * it releases the primary context, and re-creating that costs far more
 * than a cached run may (issue 4: < 5 ms). Runs are serialized on it. A
 * run that fails in the driver (a launch error can poison the context)
 * closes it, so the next run opens afresh. */
static pthread_mutex_t cuda_mu = PTHREAD_MUTEX_INITIALIZER;
static rt_cuda_device *cuda_dev;

tsl_status api_compiled_cuda_run(tsl_program *p, const lang_bound *b, const struct interp_tensor *views,
                                 tsl_diag *d)
{
    const lang_def *def = p->def;
    int n = def->ntensors;
    tsl_arena *a = arena_create();
    rt_cuda_ptr *ptrs = calloc((size_t)n + 1, sizeof *ptrs);
    double *scalars = calloc((size_t)n + 1, sizeof *scalars);
    sched_dev *x = NULL;
    tsl_status st = TSL_OK;
    if (!a || !ptrs || !scalars) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
    }
    sched_plan *plan = st ? NULL : cuda_plan(p, a, d);
    if (!st && !plan) st = d->first ? d->first : TSL_ERR_INTERNAL;
    pthread_mutex_lock(&cuda_mu);
    if (!st && !cuda_dev && (st = rt_cuda_open(&cuda_dev, d)) != TSL_OK) cuda_unavailable(d);
    rt_cuda_device *dev = cuda_dev;
    if (!st) st = sched_dev_create(plan, dev, &x, d);
    for (int i = 0; !st && i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar) {
            scalars[i] = views[i].scalar;
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        size_t bytes = cuda_tensor_bytes(def, b, i);
        if (!bytes) continue;
        st = rt_cuda_alloc(dev, bytes, &ptrs[i], d);
        if (st) diag_error(d, st, "device memory for '%s' (%zu bytes)", t->name, bytes);
        if (!st) st = cuda_transfer(dev, &views[i], ptrs[i], bytes, 1, t->name, d);
    }
    if (!st) st = sched_dev_run(x, b, ptrs, scalars, 1, d);
    for (int i = 0; !st && i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || !(t->flags & LANG_TENSOR_OUTPUT)) continue;
        st = cuda_transfer(dev, &views[i], ptrs[i], cuda_tensor_bytes(def, b, i), 0, t->name, d);
    }
    if (st == TSL_ERR_BOUNDS) cuda_locate_bounds_error(b, views, d);
    sched_dev_free(x);
    for (int i = 0; ptrs && dev && i < n; i++) rt_cuda_free(dev, ptrs[i]);
    if (st == TSL_ERR_RUNTIME) {
        rt_cuda_close(cuda_dev);
        cuda_dev = NULL;
    }
    pthread_mutex_unlock(&cuda_mu);
    free(ptrs);
    free(scalars);
    arena_free(a);
    return st;
}
