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

/* The verified plan of def `name` of src, parsed afresh into arena a (so
 * that the plan owns everything it points at); NULL after reporting into d. */
static sched_plan *cuda_plan(const tsl_source *src, const char *name, int sm, tsl_arena *a, tsl_diag *d)
{
    lang_module *mod = lang_parse_check(a, src, d);
    const lang_def *def = mod ? lang_module_find(mod, name) : NULL;
    if (!def) {
        if (!d->nerr) diag_error(d, TSL_ERR_INTERNAL, "internal: '%s' does not parse again", name);
        return NULL;
    }
    graph *g = graph_build(a, def, d);
    sched_plan *plan = g ? sched_lower_sm(a, g, TSL_TARGET_CUDA, sm, d) : NULL;
    if (!plan) {
        if (!d->nerr) diag_error(d, TSL_ERR_INTERNAL, "scheduling '%s' failed", name);
        return NULL;
    }
    if (tile_verify(plan->m, NULL, d) != TSL_OK) {
        diag_error(d, TSL_ERR_INTERNAL, "internal: the schedule of '%s' does not verify", name);
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
    return tsl_dtype_nbytes(sched_tensor_boundary_dtype(t), (int64_t)n); /* low-bit: packed or its carrier */
}

/* Move def tensor i between host view v and device buffer ptr (bytes). */
static tsl_status cuda_transfer(rt_cuda_device *dev, const interp_tensor *v, rt_cuda_ptr ptr, size_t bytes,
                                int to_device, const char *name, tsl_diag *d)
{
    if (!bytes) return TSL_OK;
    if (api_view_dense(v))
        return to_device ? rt_cuda_copy_htod(dev, ptr, v->base, bytes, d)
                         : rt_cuda_copy_dtoh(dev, v->base, ptr, bytes, d);
    char *tmp = malloc(bytes);
    if (!tmp) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory for a dense copy of '%s' (%zu bytes)", name, bytes);
        return TSL_ERR_NOMEM;
    }
    tsl_status st;
    if (to_device) {
        api_view_copy(v, tmp, 1);
        st = rt_cuda_copy_htod(dev, ptr, tmp, bytes, d);
    } else {
        st = rt_cuda_copy_dtoh(dev, tmp, ptr, bytes, d);
        if (!st) api_view_copy(v, tmp, 0);
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

/* Prepared plans, kept across runs: generating the CUDA source of a plan
 * costs tens to hundreds of ms, its cubins then load from the disk cache;
 * a repeated run of the same def needs neither. Keyed by the def's name
 * and the program's whole source text (the plan does not depend on
 * sizes); each entry owns a fresh parse of the source, so freeing the
 * program it came from changes nothing. Least recently used goes first. */
enum { CUDA_PLANS = 16 };
typedef struct cuda_prepared {
    char *key;        /* "<def name>\n<source text>"; NULL: a free slot */
    tsl_arena *arena; /* the parse, graph and plan */
    sched_dev *x;     /* the plan's kernels, loaded on cuda_dev */
    uint64_t used;
} cuda_prepared;
static cuda_prepared cuda_plans[CUDA_PLANS];
static uint64_t cuda_clock;

static void cuda_prepared_drop(cuda_prepared *e)
{
    sched_dev_free(e->x);
    arena_free(e->arena);
    free(e->key);
    memset(e, 0, sizeof *e);
}

/* The prepared plan of p's def on cuda_dev, made on a miss. */
static sched_dev *cuda_prepare(tsl_program *p, tsl_diag *d, tsl_status *st)
{
    strbuf kb = {0};
    sb_printf(&kb, "%s\n%s", p->def->name, p->src.text);
    cuda_prepared *slot = &cuda_plans[0];
    for (int i = 0; i < CUDA_PLANS; i++) {
        cuda_prepared *e = &cuda_plans[i];
        if (e->key && !strcmp(e->key, sb_str(&kb))) {
            e->used = ++cuda_clock;
            sb_free(&kb);
            return e->x;
        }
        if (!e->key ? slot->key != NULL : slot->key && e->used < slot->used) slot = e;
    }
    tsl_arena *a = arena_create();
    tsl_source *src = a ? arena_alloc(a, sizeof *src) : NULL; /* the entry's own copy */
    if (src) {
        src->name = arena_strdup(a, p->src.name);
        src->text = arena_strdup(a, p->src.text);
    }
    /* the plan for the device's own arch (sm_90a: TMA and wgmma) */
    int sm = sched_sm_of_arch(rt_cuda_device_info(cuda_dev)->arch);
    sched_plan *plan = src ? cuda_plan(src, p->def->name, sm, a, d) : NULL;
    sched_dev *x = NULL;
    *st = !a ? TSL_ERR_NOMEM : !plan ? (d->first ? d->first : TSL_ERR_INTERNAL) : TSL_OK;
    if (!a) diag_error(d, TSL_ERR_NOMEM, "out of memory");
    if (!*st) *st = sched_dev_create(plan, cuda_dev, &x, d);
    if (*st) {
        arena_free(a);
        sb_free(&kb);
        return NULL;
    }
    cuda_prepared_drop(slot);
    slot->key = sb_take(&kb);
    slot->arena = a;
    slot->x = x;
    slot->used = ++cuda_clock;
    return x;
}

tsl_status api_compiled_cuda_run(tsl_program *p, const lang_bound *b, const struct interp_tensor *views,
                                 tsl_diag *d)
{
    const lang_def *def = p->def;
    int n = def->ntensors;
    rt_cuda_ptr *ptrs = calloc((size_t)n + 1, sizeof *ptrs);
    double *scalars = calloc((size_t)n + 1, sizeof *scalars);
    sched_dev *x = NULL;
    tsl_status st = TSL_OK;
    if (!ptrs || !scalars) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
    }
    pthread_mutex_lock(&cuda_mu);
    if (!st && !cuda_dev && (st = rt_cuda_open(&cuda_dev, d)) != TSL_OK) cuda_unavailable(d);
    rt_cuda_device *dev = cuda_dev;
    if (!st) x = cuda_prepare(p, d, &st);
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
    for (int i = 0; ptrs && dev && i < n; i++) rt_cuda_free(dev, ptrs[i]);
    if (st == TSL_ERR_RUNTIME && cuda_dev) {
        for (int i = 0; i < CUDA_PLANS; i++) cuda_prepared_drop(&cuda_plans[i]);
        rt_cuda_close(cuda_dev);
        cuda_dev = NULL;
    }
    pthread_mutex_unlock(&cuda_mu);
    free(ptrs);
    free(scalars);
    return st;
}
