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

/* ---- prepared plans ------------------------------------------------------------------------------ */

enum { PREPARED_MAX = 16 };

typedef struct prepared {
    char *key; /* "<def name>\n<source text>"; NULL: a free slot */
    drv_prepared *p;
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
    drv_prepared_free(e->p);
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
            return drv_prepared_exec(e->p);
        }
        if (!e->key ? slot->key != NULL : slot->key && e->used < slot->used) slot = e;
    }
    drv_executable *x = NULL;
    drv_prepared *pp = NULL;
    *st = drv_compile(p->def, t, t->rt->arch(s->dev), NULL, &x, d);
    if (!*st) *st = drv_prepare(x, t, s->dev, &pp, d);
    if (*st) {
        sb_free(&kb);
        return NULL;
    }
    prepared_drop(slot);
    slot->key = sb_take(&kb);
    slot->p = pp;
    slot->used = ++s->clock;
    return drv_prepared_exec(pp);
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

tsl_status api_compiled_run(tsl_program *p, tsl_target target, const lang_bound *b,
                            const struct interp_tensor *views, tsl_diag *d)
{
    const drv_target *t = drv_target_of(target);
    if (!t) {
        diag_error(d, TSL_ERR_ARG, "target %d is not a compiled target", (int)target);
        return TSL_ERR_ARG;
    }
    tsl_status st = TSL_OK;
    target_state *s = &states[target == TSL_TARGET_CUDA];
    pthread_mutex_lock(&s->mu);
    if (!st && target == TSL_TARGET_CUDA && !s->dev) {
        rt_cuda_device *dev = NULL;
        st = rt_cuda_open(&dev, d);
        if (st) unavailable(t->name, d);
        s->dev = dev;
    }
    rt_exec *e = st ? NULL : prepare(p, t, s, d, &st);
    if (!st) st = drv_run(e, b, views, d);
    if (st == TSL_ERR_BOUNDS) locate_bounds_error(b, views, d);
    if (st == TSL_ERR_RUNTIME && target == TSL_TARGET_CUDA && s->dev) {
        /* a launch error can poison the context: start afresh next run */
        for (int i = 0; i < PREPARED_MAX; i++) prepared_drop(&s->plans[i]);
        rt_cuda_close(s->dev);
        s->dev = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    return st;
}
