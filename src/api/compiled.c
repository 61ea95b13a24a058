/* compiled.c — the compiled targets behind tsl_program_run and
 * tsl_program_emit: one path for the CPU and CUDA alike.
 *
 * Run: the def's executable (drv_compile: schedule, expand, emit, compile
 * for the device's arch) and its executor (rt_exec) are prepared once and
 * kept per program and target (the 16 most recently used, keyed by the
 * def's name and the whole source text; the plan does not depend on
 * sizes): generating a plan's CUDA source alone costs 25-200 ms, more than
 * a cached run may add. A run binds every tensor — on a host-memory target
 * the caller's storage (a dense copy of a strided view), else a device
 * buffer each copied in once, outputs too so in/out data and untouched
 * elements survive — runs every launch checked, and copies the outputs
 * back. A kernel's index out of range (TSL_ERR_BOUNDS) comes back with the
 * reference interpreter's located message (it reruns on the same inputs).
 *
 * The CUDA device ($TESSEL_CUDA_DEVICE, default 0) stays open for the
 * process once a run opened it (re-creating the primary context costs more
 * than a cached run may add); a run that fails in the driver closes it and
 * drops its prepared plans, so the next run opens afresh. No driver or no
 * device: TSL_ERR_UNAVAILABLE with the runtime's reason, and the other
 * targets still run. Runs of one target are serialised.
 *
 * Emit: "tile[:cpu|:cuda]" is the schedule's dump, "c" / "cuda" the source
 * dump of the CPU / CUDA plan, through the same driver. */
#include <pthread.h>
#include <string.h>

#include "api/api.h"
#include "driver/driver.h"
#include "interp/interp.h"
#include "runtime/runtime.h"

/* ---- emit ------------------------------------------------------------------------------------ */

static void emit_append(void *ctx, drv_stage stage, const char *text)
{
    (void)stage;
    sb_puts(ctx, text);
}

tsl_status api_compiled_emit(tsl_program *p, const char *what, strbuf *out)
{
    tsl_diag *d = &p->ctx->diag;
    diag_reset(d);
    /* c and tile:cpu show the CPU target's plan, cuda and tile:cuda the
     * CUDA target's; plain tile is tile:cpu */
    int cuda = !strcmp(what, "cuda") || !strcmp(what, "tile:cuda");
    drv_stage stage = !strncmp(what, "tile", 4) ? DRV_STAGE_SCHED : DRV_STAGE_SOURCE;
    drv_options o = {.dump = 1u << stage, .dump_fn = emit_append, .dump_ctx = out, .stop_after = stage + 1};
    drv_executable *x = NULL;
    tsl_status st = drv_compile(p->def, cuda ? &drv_target_cuda : &drv_target_cpu, NULL, &o, &x, d);
    drv_executable_free(x);
    return st;
}

/* ---- host views ---------------------------------------------------------------------------------- */

/* Is the view C-contiguous for its shape? */
int api_view_dense(const interp_tensor *v)
{
    int64_t want = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->stride[d] != want) return 0;
        want *= v->shape[d];
    }
    return 1;
}

/* Copy between a strided view and a C-order buffer (to_dense: view -> buf). */
void api_view_copy(const interp_tensor *v, char *buf, int to_dense)
{
    size_t es = (size_t)(dtype_info_of(v->dtype)->bits / 8);
    int64_t n = 1, idx[TSL_MAX_RANK] = {0};
    for (int d = 0; d < v->rank; d++) n *= v->shape[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < v->rank; d++) off += idx[d] * v->stride[d];
        char *src = v->base + off * (int64_t)es;
        if (to_dense) memcpy(buf + (size_t)i * es, src, es);
        else memcpy(src, buf + (size_t)i * es, es);
        for (int d = v->rank - 1; d >= 0; d--) {
            if (++idx[d] < v->shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* ---- prepared plans ------------------------------------------------------------------------------ */

enum { PREPARED_MAX = 16 };

typedef struct prepared {
    char *key; /* "<def name>\n<source text>"; NULL: a free slot */
    drv_executable *x;
    rt_exec *e;
    uint64_t used;
} prepared;

/* Per target: its lock, its device (CUDA; NULL on the CPU) and plans. */
typedef struct target_state {
    pthread_mutex_t mu;
    void *dev;
    prepared plans[PREPARED_MAX];
    uint64_t clock;
} target_state;

static target_state states[2] = {{.mu = PTHREAD_MUTEX_INITIALIZER}, {.mu = PTHREAD_MUTEX_INITIALIZER}};

static void prepared_drop(prepared *e)
{
    rt_exec_free(e->e);
    drv_executable_free(e->x);
    free(e->key);
    memset(e, 0, sizeof *e);
}

/* The prepared executor of p's def on target t (state s), made on a miss. */
static rt_exec *prepare(tsl_program *p, const drv_target *t, target_state *s, tsl_diag *d, tsl_status *st)
{
    strbuf kb = {0};
    sb_printf(&kb, "%s\n%s", p->def->name, p->src.text);
    prepared *slot = &s->plans[0];
    for (int i = 0; i < PREPARED_MAX; i++) {
        prepared *e = &s->plans[i];
        if (e->key && !strcmp(e->key, sb_str(&kb))) {
            e->used = ++s->clock;
            sb_free(&kb);
            return e->e;
        }
        if (!e->key ? slot->key != NULL : slot->key && e->used < slot->used) slot = e;
    }
    drv_executable *x = NULL;
    rt_exec *e = NULL;
    *st = drv_compile(p->def, t, t->rt->arch(s->dev), NULL, &x, d);
    if (!*st) *st = rt_exec_create(x->plan, t->rt, s->dev, &e, d);
    if (*st) {
        drv_executable_free(x);
        sb_free(&kb);
        return NULL;
    }
    prepared_drop(slot);
    slot->key = sb_take(&kb);
    slot->x = x;
    slot->e = e;
    slot->used = ++s->clock;
    return e;
}

/* "target 'cuda' is unavailable: <the runtime's reason>" in place of the
 * runtime's bare message (no driver, no device). */
static void unavailable(const char *target, tsl_diag *d)
{
    tsl_status st = d->first ? d->first : TSL_ERR_UNAVAILABLE;
    char *why = strdup(sb_str(&d->msg));
    const char *m = why ? why : "";
    if (!strncmp(m, "error: ", 7)) m += 7;
    size_t len = strlen(m);
    while (len && m[len - 1] == '\n') len--;
    diag_reset(d);
    diag_error(d, st, "target '%s' is unavailable: %.*s", target, (int)len, m);
    free(why);
}

/* Replace a kernel's index error with the interpreter's located one. */
static void locate_bounds_error(const lang_bound *b, const interp_tensor *views, tsl_diag *d)
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

/* ---- running ------------------------------------------------------------------------------------- */

/* Per def tensor: where the kernels see it, and what the run owns. */
typedef struct run_buf {
    rt_ptr data;
    char *host;    /* a dense host copy of a strided view (host-memory targets) */
    rt_ptr dev;    /* a device buffer (device targets) */
    size_t bytes;
} run_buf;

static size_t tensor_bytes(const lang_def *def, const lang_bound *b, int i)
{
    const lang_tensor *t = def->tensors[i];
    size_t n = 1;
    for (int k = 0; k < t->rank; k++) n *= (size_t)b->shapes[i][k];
    return n * tsl_dtype_size(t->dtype);
}

/* Move def tensor i between host view v and device buffer ptr. */
static tsl_status transfer(const rt_target *rt, void *dev, const interp_tensor *v, rt_ptr ptr, size_t bytes,
                           int to_device, const char *name, tsl_diag *d)
{
    if (!bytes) return TSL_OK;
    rt_copy_kind kind = to_device ? RT_COPY_HTOD : RT_COPY_DTOH;
    if (api_view_dense(v))
        return to_device ? rt->copy(dev, ptr, (rt_ptr)(uintptr_t)v->base, bytes, kind, d)
                         : rt->copy(dev, (rt_ptr)(uintptr_t)v->base, ptr, bytes, kind, d);
    char *tmp = malloc(bytes);
    if (!tmp) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory for a dense copy of '%s' (%zu bytes)", name, bytes);
        return TSL_ERR_NOMEM;
    }
    tsl_status st;
    if (to_device) {
        api_view_copy(v, tmp, 1);
        st = rt->copy(dev, ptr, (rt_ptr)(uintptr_t)tmp, bytes, kind, d);
    } else {
        st = rt->copy(dev, (rt_ptr)(uintptr_t)tmp, ptr, bytes, kind, d);
        if (!st) api_view_copy(v, tmp, 0);
    }
    free(tmp);
    return st;
}

/* Bind every parameter and output into bufs (and the run's arrays). */
static tsl_status bind(const lang_def *def, const lang_bound *b, const interp_tensor *views, const rt_target *rt,
                       void *dev, run_buf *bufs, rt_ptr *data, int64_t *words, tsl_diag *d)
{
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar) {
            double v = views[i].scalar;
            if (dtype_info_of(t->dtype)->is_float) memcpy(&words[i], &v, 8);
            else words[i] = (int64_t)v;
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        run_buf *rb = &bufs[i];
        rb->bytes = tensor_bytes(def, b, i);
        if (rt->host_memory) {
            rb->data = (rt_ptr)(uintptr_t)views[i].base;
            if (!api_view_dense(&views[i])) {
                rb->host = calloc(rb->bytes ? rb->bytes : 1, 1);
                if (!rb->host) {
                    diag_error(d, TSL_ERR_NOMEM, "out of memory for a dense copy of '%s' (%zu bytes)", t->name,
                               rb->bytes);
                    return TSL_ERR_NOMEM;
                }
                api_view_copy(&views[i], rb->host, 1);
                rb->data = (rt_ptr)(uintptr_t)rb->host;
            }
        } else if (rb->bytes) {
            tsl_status st = rt->alloc(dev, rb->bytes, &rb->dev, d);
            if (st) {
                diag_error(d, st, "device memory for '%s' (%zu bytes)", t->name, rb->bytes);
                return st;
            }
            rb->data = rb->dev;
            st = transfer(rt, dev, &views[i], rb->dev, rb->bytes, 1, t->name, d);
            if (st) return st;
        }
        data[i] = rb->data;
    }
    return TSL_OK;
}

/* Outputs back to the caller's views. */
static tsl_status unbind(const lang_def *def, const interp_tensor *views, const rt_target *rt, void *dev,
                         const run_buf *bufs, tsl_diag *d)
{
    tsl_status st = TSL_OK;
    for (int i = 0; !st && i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (t->is_scalar || !(t->flags & LANG_TENSOR_OUTPUT)) continue;
        if (bufs[i].host) api_view_copy(&views[i], bufs[i].host, 0);
        else if (bufs[i].dev) st = transfer(rt, dev, &views[i], bufs[i].dev, bufs[i].bytes, 0, t->name, d);
    }
    return st;
}

tsl_status api_compiled_run(tsl_program *p, tsl_target target, const lang_bound *b,
                            const struct interp_tensor *views, tsl_diag *d)
{
    const drv_target *t = drv_target_of(target);
    if (!t) {
        diag_error(d, TSL_ERR_ARG, "target %d is not a compiled target", (int)target);
        return TSL_ERR_ARG;
    }
    const rt_target *rt = t->rt;
    const lang_def *def = p->def;
    int n = def->ntensors;
    run_buf *bufs = calloc((size_t)n + 1, sizeof *bufs);
    rt_ptr *data = calloc((size_t)n + 1, sizeof *data);
    int64_t *words = calloc((size_t)n + 1, sizeof *words);
    const int64_t **shapes = calloc((size_t)n + 1, sizeof *shapes);
    int64_t *lanes = calloc((size_t)def->nstmts + 1, sizeof *lanes);
    tsl_status st = TSL_OK;
    if (!bufs || !data || !words || !shapes || !lanes) {
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        st = TSL_ERR_NOMEM;
    }
    for (int i = 0; !st && i < n; i++) shapes[i] = b->shapes[i];
    for (int s = 0; !st && s < def->nstmts; s++) {
        lanes[s] = 1;
        for (int v = 0; v < def->stmts[s].niter; v++) {
            int64_t e = b->stmts[s].hi[v] - b->stmts[s].lo[v];
            lanes[s] = e <= 0 ? 0 : lanes[s] * e;
            if (e <= 0) break;
        }
    }
    target_state *s = &states[target == TSL_TARGET_CUDA];
    pthread_mutex_lock(&s->mu);
    if (!st && target == TSL_TARGET_CUDA && !s->dev) {
        rt_cuda_device *dev = NULL;
        st = rt_cuda_open(&dev, d);
        if (st) unavailable(t->name, d);
        s->dev = dev;
    }
    void *dev = s->dev;
    rt_exec *e = st ? NULL : prepare(p, t, s, d, &st);
    if (!st) st = bind(def, b, views, rt, dev, bufs, data, words, d);
    rt_run r = {.data = data, .shape = shapes, .words = words, .sizes = b->sizes, .lanes = lanes};
    if (!st) st = rt_exec_run(e, &r, 1, d);
    if (!st) st = unbind(def, views, rt, dev, bufs, d);
    if (st == TSL_ERR_BOUNDS) locate_bounds_error(b, views, d);
    for (int i = 0; bufs && i < n; i++) {
        free(bufs[i].host);
        if (bufs[i].dev) rt->free(dev, bufs[i].dev);
    }
    if (st == TSL_ERR_RUNTIME && target == TSL_TARGET_CUDA && s->dev) {
        /* a launch error can poison the context: start afresh next run */
        for (int i = 0; i < PREPARED_MAX; i++) prepared_drop(&s->plans[i]);
        rt_cuda_close(s->dev);
        s->dev = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    free(bufs);
    free(data);
    free(words);
    free(shapes);
    free(lanes);
    return st;
}
