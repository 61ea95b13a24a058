/* compiled.c — the compiled targets behind tsl_program_run and
 * tsl_program_emit: one path for the CPU and CUDA alike.
 *
 * Run: the def's executable (drv_compile: schedule, expand, emit, compile
 * for the device's arch; or the cache's copy, keyed by the alpha-renamed
 * program, target, arch, options, toolchain and tessel's build) and its
 * executor (rt_exec) are prepared once and kept per program and target
 * (the 16 most recently used, keyed by the def's name, the options and the
 * whole source text; the plan does not depend on sizes): generating a
 * plan's CUDA source alone costs 25-200 ms, more than a cached run may add. A run binds every tensor — on a host-memory target
 * the caller's storage (a dense copy of a strided view), else a device
 * buffer each copied in once, outputs too so in/out data and untouched
 * elements survive — runs every launch checked, and copies the outputs
 * back. A kernel's index out of range (TSL_ERR_BOUNDS), or on the CPU an
 * integer division by zero (TSL_ERR_RUNTIME), comes back with the
 * reference interpreter's located message (it reruns on the same inputs).
 * Each run fills the thread's rt_stats (tsl_program_run_stats): planning,
 * code generation and compiling (the driver and the runtimes), loading
 * (preparing an executable), the run, and whether its kernels were
 * compiled, read from the on-disk cache or already prepared here.
 *
 * The CUDA device ($TESSEL_CUDA_DEVICE, default 0) stays open for the
 * process once a run opened it (re-creating the primary context costs more
 * than a cached run may add); a run that fails in the driver closes it and
 * drops its prepared plans, so the next run opens afresh. No driver or no
 * device: TSL_ERR_UNAVAILABLE with the runtime's reason, and the other
 * targets still run. Runs of one target are serialised.
 *
 * Device tensors (api_compiled_run_device): the same prepared executor on
 * the tensors' own device addresses, queued on the caller's stream, a
 * run's temporaries and scratch from the caller's allocator (else
 * cuMemAllocAsync on the stream); no copy and no wait unless asked. An
 * executor used while its stream was captured into a CUDA graph is never
 * freed (the graph holds its kernels): evicted, it is retired, not freed.
 *
 * Emit: a stage of the same driver — "tile", "expand", "select", "source",
 * "plan", each with ":cpu" or ":cuda" (default the CPU) —, "c" / "cuda"
 * (the source of the CPU / CUDA plan) or "ptx"; the CUDA kinds with an
 * arch (":sm_90a"; default sm_80). "c", "cuda" and "ptx" take "@KERNEL"
 * last: that kernel's text only. */
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

/* What `tsl_program_emit` can ask the driver for: KIND[:TARGET][:ARCH].
 * A stage (default target the CPU), or "c" / "cuda" (the source stage of
 * that target), or "ptx" (the CUDA source through NVRTC). ARCH ("sm_90a")
 * picks the CUDA plan; default sm_80. */
static const struct {
    const char *name;
    drv_stage stage;
    tsl_target target;
    int fixed; /* the target is part of the kind */
} emit_kinds[] = {
    {"tile", DRV_STAGE_SCHED, TSL_TARGET_CPU, 0},     {"expand", DRV_STAGE_EXPAND, TSL_TARGET_CPU, 0},
    {"select", DRV_STAGE_SELECT, TSL_TARGET_CPU, 0},  {"source", DRV_STAGE_SOURCE, TSL_TARGET_CPU, 0},
    {"plan", DRV_STAGE_PLAN, TSL_TARGET_CPU, 0},      {"c", DRV_STAGE_SOURCE, TSL_TARGET_CPU, 1},
    {"cuda", DRV_STAGE_SOURCE, TSL_TARGET_CUDA, 1},   {"ptx", DRV_STAGE_SOURCE, TSL_TARGET_CUDA, 1},
};

typedef struct emit_req {
    int kind;
    tsl_target target;
    char arch[24];
    char kernel[160]; /* "@KERNEL": print that kernel only ("" : all) */
} emit_req;

static int emit_parse(const char *whole, emit_req *r)
{
    /* KIND[:TARGET][:ARCH][@KERNEL]: the kernel name off first */
    char what[64];
    size_t wl = strcspn(whole, "@");
    r->kernel[0] = 0;
    if (wl >= sizeof what) return -1;
    snprintf(what, sizeof what, "%.*s", (int)wl, whole);
    if (whole[wl]) {
        if (!whole[wl + 1] || strlen(whole + wl + 1) >= sizeof r->kernel) return -1;
        snprintf(r->kernel, sizeof r->kernel, "%s", whole + wl + 1);
    }
    size_t n = strcspn(what, ":");
    r->kind = -1;
    for (size_t i = 0; i < TSL_COUNTOF(emit_kinds); i++)
        if (strlen(emit_kinds[i].name) == n && !strncmp(what, emit_kinds[i].name, n)) r->kind = (int)i;
    if (r->kind < 0) return -1;
    r->target = emit_kinds[r->kind].target;
    snprintf(r->arch, sizeof r->arch, "sm_80");
    const char *p = what + n;
    int seen_target = 0, seen_arch = 0;
    while (*p == ':') {
        p++;
        size_t m = strcspn(p, ":");
        if (!seen_target && !seen_arch && !emit_kinds[r->kind].fixed && (m == 3 || m == 4) &&
            (!strncmp(p, "cpu", m) || !strncmp(p, "cuda", m))) {
            r->target = m == 3 ? TSL_TARGET_CPU : TSL_TARGET_CUDA;
            seen_target = 1;
        } else if (!seen_arch && m > 3 && m < sizeof r->arch && !strncmp(p, "sm_", 3)) {
            snprintf(r->arch, sizeof r->arch, "%.*s", (int)m, p);
            seen_arch = 1;
        } else {
            return -1;
        }
        p += m;
    }
    if (seen_arch && r->target != TSL_TARGET_CUDA) return -1;
    if (r->kernel[0] && !emit_kinds[r->kind].fixed) return -1; /* @KERNEL: c, cuda, ptx only */
    return 0;
}

int api_compiled_emit_kind(const char *what)
{
    emit_req r;
    return emit_parse(what, &r) ? -1 : r.kind;
}

/* The plan's kernel named `name` (-1 and an error listing them if none). */
static int emit_find_kernel(const tsl_program *p, const rt_plan *plan, const char *name, tsl_diag *d)
{
    for (int i = 0; i < plan->nkernels; i++)
        if (!strcmp(plan->kernels[i].name, name)) return i;
    strbuf names = {0};
    for (int i = 0; i < plan->nkernels; i++) sb_printf(&names, "%s%s", i ? ", " : "", plan->kernels[i].name);
    diag_error(d, TSL_ERR_ARG, "'%s' has no kernel named %s (its kernels: %s)", p->def->name, name, sb_str(&names));
    sb_free(&names);
    return -1;
}

tsl_status api_compiled_emit(tsl_program *p, const char *what, strbuf *out)
{
    tsl_diag *d = api_diag(p->ctx);
    diag_reset(d);
    emit_req r;
    if (emit_parse(what, &r)) {
        diag_error(d, TSL_ERR_ARG, "unknown emit kind '%s'", what);
        return TSL_ERR_ARG;
    }
    drv_stage stage = emit_kinds[r.kind].stage;
    int ptx = !strcmp(emit_kinds[r.kind].name, "ptx");
    /* c, cuda and ptx come from the plan's kernels, each once (launches
     * may share one), not from the source stage's dump of every launch */
    int from_plan = emit_kinds[r.kind].fixed;
    drv_options o = {.sched = &p->opt, .dump = from_plan ? 0 : 1u << stage, .dump_fn = emit_append, .dump_ctx = out,
                     .stop_after = stage + 1, .no_compile = 1};
    drv_executable *x = NULL;
    const char *arch = r.target == TSL_TARGET_CUDA ? r.arch : NULL;
    tsl_status st = drv_compile(p->def, drv_target_of(r.target), arch, &o, &x, d);
    int only = -1;
    if (!st && r.kernel[0] && (only = emit_find_kernel(p, x->plan, r.kernel, d)) < 0) st = TSL_ERR_ARG;
    /* ptx through NVRTC, which needs no GPU */
    for (int i = 0, n = 0; !st && from_plan && i < x->plan->nkernels; i++) {
        const rt_kernel *k = &x->plan->kernels[i];
        if (only >= 0 && i != only) continue;
        if (n++) sb_putc(out, '\n');
        if (!ptx) {
            sb_puts(out, k->source);
            continue;
        }
        char *text = NULL;
        rt_cuda_options co = {.name = k->name};
        st = rt_cuda_compile_ptx(k->source, r.arch, &co, &text, d);
        if (!st) sb_puts(out, text);
        free(text);
    }
    drv_executable_free(x);
    return st;
}

/* ---- prepared plans ------------------------------------------------------------------------------ */

enum { PREPARED_MAX = 16 };

typedef struct prepared {
    char *key; /* "<def name>\n<options>\n<source text>"; NULL: a free slot */
    drv_prepared *p;
    int captured; /* its kernels were captured into a CUDA graph */
    uint64_t used;
    uint64_t serial; /* which filling of a slot this is (target_state.serial) */
} prepared;



/* Per target: its lock, its device (CUDA; NULL on the CPU) and plans. */
typedef struct target_state {
    pthread_mutex_t mu;
    void *dev;
    prepared plans[PREPARED_MAX];
    uint64_t clock;
    /* every filling of a slot gets the next serial: a program remembers
     * per target the slot and serial its last run found
     * (tsl_program.prepared_at, under this lock), and while the slot holds
     * that filling, that program's key is in it */
    uint64_t serial;
} target_state;

static target_state states[2] = {{.mu = PTHREAD_MUTEX_INITIALIZER}, {.mu = PTHREAD_MUTEX_INITIALIZER}};

/* Executors whose kernels a CUDA graph captured: a graph may replay them
 * (modules, error records) at any time, so they are never freed; one per
 * captured program, kept for the process. Guarded by the CUDA state's lock. */
static drv_prepared **retired;
static int nretired, capretired;

static void prepared_drop(prepared *e)
{
    if (e->captured && e->p) {
        if (nretired == capretired) {
            int cap = capretired ? 2 * capretired : 8;
            drv_prepared **r = realloc(retired, sizeof *r * (size_t)cap);
            if (r) {
                retired = r;
                capretired = cap;
            }
        }
        if (nretired < capretired) retired[nretired++] = e->p;
        e->p = NULL; /* (when out of memory: leaked, never freed under a graph) */
    }
    drv_prepared_free(e->p);
    free(e->key);
    memset(e, 0, sizeof *e);
}

tsl_status api_prepare_cached(tsl_program *p, const drv_target *t, void *dev, const sched_options *opt,
                              const char *opt_text, drv_prepared **out, tsl_diag *d)
{
    return drv_prepare_cached(p->def, t, dev, opt, opt_text, out, d);
}

void api_compiled_forget(void)
{
    for (int t = 0; t < 2; t++) {
        pthread_mutex_lock(&states[t].mu);
        for (int i = 0; i < PREPARED_MAX; i++) prepared_drop(&states[t].plans[i]);
        pthread_mutex_unlock(&states[t].mu);
    }
}

/* Is key "<name>\n<options>\n<text>"? (Compared in place: building the
 * key on every run cost a printf and an allocation of the source's size.) */
static int key_is(const char *key, const char *name, const char *opt, const char *text)
{
    const char *parts[3] = {name, opt, text};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(parts[i]);
        if (strncmp(key, parts[i], n)) return 0;
        key += n;
        if (i < 2 && *key++ != '\n') return 0;
    }
    return *key == 0;
}

/* The prepared executor of p's def on target t (state s), made on a miss;
 * `captured`: this run is being captured into a CUDA graph (the executor is
 * then never freed). */
/* The slot's filling found for p under these options: the one p's last
 * run found (its name and source text are p's, so only the options are
 * compared: a cached run compares no source text), else a search. */
static prepared *prepare_find(tsl_program *p, target_state *s, const char *opt_text)
{
    struct tsl_prepared_at *at = &p->prepared_at[s - states];
    if (at->serial) {
        prepared *e = &s->plans[at->slot];
        size_t nl = strlen(p->def->name), no = strlen(opt_text);
        if (e->key && e->serial == at->serial && !strncmp(e->key + nl + 1, opt_text, no) && e->key[nl + 1 + no] == '\n')
            return e;
    }
    for (int i = 0; i < PREPARED_MAX; i++) {
        prepared *e = &s->plans[i];
        if (e->key && key_is(e->key, p->def->name, opt_text, p->src.text)) {
            *at = (struct tsl_prepared_at){i, e->serial};
            return e;
        }
    }
    return NULL;
}

static rt_exec *prepare(tsl_program *p, const drv_target *t, target_state *s, const sched_options *opt,
                        const char *opt_text, int captured, tsl_diag *d, tsl_status *st)
{
    prepared *e = prepare_find(p, s, opt_text);
    if (e) {
        e->used = ++s->clock;
        e->captured |= captured;
        int nk = drv_prepared_executable(e->p)->plan->nkernels;
        rt_stats_here()->loaded += nk;
        rt_stats_here()->kernels += nk;
        return drv_prepared_exec(e->p);
    }
    prepared *slot = &s->plans[0];
    for (int i = 0; i < PREPARED_MAX; i++) {
        e = &s->plans[i];
        if (!e->key ? slot->key != NULL : slot->key && e->used < slot->used) slot = e;
    }
    drv_prepared *pp = NULL;
    *st = api_prepare_cached(p, t, s->dev, opt, opt_text, &pp, d);
    if (*st) return NULL;
    rt_stats_here()->kernels += drv_prepared_executable(pp)->plan->nkernels;
    strbuf kb = {0};
    sb_printf(&kb, "%s\n%s\n%s", p->def->name, opt_text, p->src.text);
    prepared_drop(slot);
    slot->key = sb_take(&kb);
    slot->p = pp;
    slot->captured = captured;
    slot->used = ++s->clock;
    slot->serial = ++s->serial;
    p->prepared_at[s - states] = (struct tsl_prepared_at){(int)(slot - s->plans), slot->serial};
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

/* Replace a kernel's error st (an index out of range, a division by zero)
 * with the interpreter's located one. */
static void locate_error(tsl_status st, const lang_bound *b, const interp_tensor *views, tsl_diag *d)
{
    char *kernel_msg = strdup(sb_str(&d->msg));
    diag_reset(d);
    if (interp_run(b, views, d) == TSL_OK || !d->nerr) {
        const char *m = kernel_msg ? kernel_msg : "index out of range";
        if (!strncmp(m, "error: ", 7)) m += 7;
        size_t len = strlen(m);
        while (len && m[len - 1] == '\n') len--;
        diag_reset(d);
        diag_error(d, st, "%.*s", (int)len, m);
    }
    free(kernel_msg);
}

/* ---- tuned options ------------------------------------------------------------------------------- */


/* Tuned options looked up this process: (target, key) -> options, "" when
 * the cache has none (a miss is remembered too: the lookup is per run). */
enum { TUNED_MEMO = 32 };
static struct {
    char key[40];
    char *options;
} tuned_memo[TUNED_MEMO];
static int tuned_next;
static pthread_mutex_t tuned_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t tuned_generation; /* bumped when a tuning records options */

/* Is p's last lookup (p->tuned) for this target, device, generation and
 * these shapes? Under tuned_mu. */
static int tuned_last_is(const tsl_program *p, const drv_target *t, void *dev, const lang_bound *b)
{
    if (!p->tuned.options || p->tuned.target != (int)t->id || p->tuned.dev != dev ||
        p->tuned.gen != tuned_generation)
        return 0;
    int w = 0;
    for (int i = 0; i < p->def->nparams; i++) {
        const lang_tensor *lt = p->def->params[i];
        if (lt->is_scalar) continue;
        for (int k = 0; k < lt->rank; k++, w++)
            if (w >= p->tuned.nshapes || p->tuned.shapes[w] != b->shapes[lt->index][k]) return 0;
    }
    return w == p->tuned.nshapes;
}

/* Remember this lookup's result on p (under tuned_mu); out of memory it
 * is just not remembered. */
static void tuned_last_set(tsl_program *p, const drv_target *t, void *dev, const lang_bound *b, const char *options)
{
    int n = 0;
    for (int i = 0; i < p->def->nparams; i++)
        if (!p->def->params[i]->is_scalar) n += p->def->params[i]->rank;
    int64_t *shapes = malloc(sizeof *shapes * (size_t)(n + 1));
    char *o = strdup(options);
    if (!shapes || !o) {
        free(shapes);
        free(o);
        return;
    }
    int w = 0;
    for (int i = 0; i < p->def->nparams; i++) {
        const lang_tensor *lt = p->def->params[i];
        if (lt->is_scalar) continue;
        for (int k = 0; k < lt->rank; k++) shapes[w++] = b->shapes[lt->index][k];
    }
    api_program_forget_tuned(p);
    p->tuned.target = (int)t->id;
    p->tuned.dev = dev;
    p->tuned.gen = tuned_generation;
    p->tuned.shapes = shapes;
    p->tuned.nshapes = n;
    p->tuned.options = o;
}

void api_program_forget_tuned(tsl_program *p)
{
    free(p->tuned.shapes);
    free(p->tuned.options);
    memset(&p->tuned, 0, sizeof p->tuned);
}

/* The options found at these shapes: the program's last lookup when it was
 * at the same ones (a cached run then builds no key: the canonical text,
 * the shapes' text and the hash cost more than the rest of a tiny run),
 * else the memo, else the cache; into buf ("" when none). */
static void tuned_find(tsl_program *p, const drv_target *t, void *dev, const lang_bound *b, char *buf, size_t n)
{
    pthread_mutex_lock(&tuned_mu);
    int hit = tuned_last_is(p, t, dev, b);
    if (hit) { /* per run: a copy, not snprintf */
        size_t len = strnlen(p->tuned.options, n - 1);
        memcpy(buf, p->tuned.options, len);
        buf[len] = 0;
    }
    pthread_mutex_unlock(&tuned_mu);
    if (hit) return;
    char *canon = drv_program_canonical(p->def);
    strbuf shapes = {0};
    drv_shapes_text(p->def, b, &shapes);
    char key[33], mk[40];
    drv_program_key("tuned", canon, t, dev, NULL, sb_str(&shapes), key);
    snprintf(mk, sizeof mk, "%d:%s", (int)t->id, key);
    free(canon);
    sb_free(&shapes);
    const char *found = NULL;
    pthread_mutex_lock(&tuned_mu);
    for (int i = 0; i < TUNED_MEMO && !found; i++)
        if (tuned_memo[i].options && !strcmp(tuned_memo[i].key, mk)) found = tuned_memo[i].options;
    if (!found) {
        rt_cache_entry e;
        char *o = strdup(rt_cache_get("tuned", key, &e) && e.note ? e.note : "");
        rt_cache_entry_free(&e);
        int slot = tuned_next++ % TUNED_MEMO;
        free(tuned_memo[slot].options);
        snprintf(tuned_memo[slot].key, sizeof tuned_memo[slot].key, "%s", mk);
        tuned_memo[slot].options = o;
        found = o;
    }
    snprintf(buf, n, "%s", found ? found : "");
    tuned_last_set(p, t, dev, b, buf);
    pthread_mutex_unlock(&tuned_mu);
}

/* The tuned options of p's def at b's shapes on target t (dev's arch),
 * into *opt and *text; 0 when there are none. */
static int tuned_lookup(tsl_program *p, const drv_target *t, void *dev, const lang_bound *b, sched_options *opt,
                        strbuf *text)
{
    char copy[512] = "";
    tuned_find(p, t, dev, b, copy, sizeof copy);
    const char *found = copy;
    if (!*found) return 0;
    sched_options o = sched_options_defaults;
    char why[256];
    tsl_diag pd = {0};
    int ok = !sched_options_parse(found, &o, &pd) && !sched_options_check(&o, t->id, why, sizeof why);
    diag_free(&pd);
    if (!ok) return 0; /* a record from another space: the defaults */
    *opt = o;
    sb_puts(text, found);
    return 1;
}

void api_compiled_forget_tuned(void)
{
    pthread_mutex_lock(&tuned_mu);
    for (int i = 0; i < TUNED_MEMO; i++) {
        free(tuned_memo[i].options);
        tuned_memo[i].options = NULL;
    }
    tuned_generation++;
    pthread_mutex_unlock(&tuned_mu);
}

int api_run_options(tsl_program *p, const drv_target *t, void *dev, const lang_bound *b, sched_options *opt,
                    strbuf *text)
{
    *opt = p->opt;
    if (!p->opt_explicit && tuned_lookup(p, t, dev, b, opt, text)) {
        /* tuning chose the plan, not the numerics: tf32 stays as the program says */
        if (p->opt.allow_tf32 > 0) {
            opt->allow_tf32 = 1;
            sb_puts(text, text->len ? ",allow_tf32=1" : "allow_tf32=1");
        }
        return 1;
    }
    sb_puts(text, p->opt_text);
    return 0;
}

/* ---- running ------------------------------------------------------------------------------------- */

tsl_status api_compiled_run(tsl_program *p, tsl_target target, tsl_args *a, const struct interp_tensor *views,
                            tsl_diag *d)
{
    const drv_target *t = drv_target_of(target);
    if (!t) {
        diag_error(d, TSL_ERR_ARG, "target %d is not a compiled target", (int)target);
        return TSL_ERR_ARG;
    }
    const lang_bound *b = api_args_bound(a);
    /* a bad $TESSEL_NUM_THREADS is refused, not ignored */
    tsl_status st = target == TSL_TARGET_CPU ? rt_cpu_check_env(d) : TSL_OK;
    if (st) return st;
    target_state *s = &states[target == TSL_TARGET_CUDA];
    pthread_mutex_lock(&s->mu);
    if (!st && target == TSL_TARGET_CUDA && !s->dev) {
        rt_cuda_device *dev = NULL;
        st = rt_cuda_open(&dev, d);
        if (st) unavailable(t->name, d);
        s->dev = dev;
    }
    /* the program's options, or (never set) what tuning found for these shapes */
    sched_options opt;
    strbuf text = {0};
    int tuned = st ? 0 : api_run_options(p, t, s->dev, b, &opt, &text);
    api_args_set_used(a, sb_str(&text), tuned);
    /* CUDA: the context set once for the whole run, not per driver call */
    if (!st && target == TSL_TARGET_CUDA) st = rt_cuda_begin(s->dev, d);
    rt_exec *e = st ? NULL : prepare(p, t, s, &opt, sb_str(&text), 0, d, &st);
    sb_free(&text);
    rt_stats *rs = rt_stats_here();
    double t0 = rt_now_ms();
    if (!st) st = drv_run(e, b, views, d);
    rs->run_ms += rt_now_ms() - t0;
    if (target == TSL_TARGET_CUDA && s->dev) rt_cuda_end(s->dev);
    if (st == TSL_ERR_BOUNDS || (st == TSL_ERR_RUNTIME && target == TSL_TARGET_CPU)) locate_error(st, b, views, d);
    if (st == TSL_ERR_RUNTIME && target == TSL_TARGET_CUDA && s->dev) {
        /* a launch error can poison the context: start afresh next run */
        for (int i = 0; i < PREPARED_MAX; i++) prepared_drop(&s->plans[i]);
        rt_cuda_close(s->dev);
        s->dev = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* ---- device tensors ------------------------------------------------------------------------------
 * Tensors already on the GPU run where they are. The stream is set on the
 * device for the run and reset after it (host runs use the legacy one). */

/* The caller's allocator (else stream-ordered memory) as the run's rt_mem. */
typedef struct device_mem {
    const tsl_allocator *al;
    DLDevice dev;
    void *stream;
    rt_cuda_device *cuda;
} device_mem;

/* (The caller's allocator may make another context current: the run's
 * next driver call sets the device's again.) */
static rt_ptr device_mem_alloc(void *user, size_t bytes)
{
    device_mem *m = user;
    if (m->al) {
        rt_ptr p = (rt_ptr)(uintptr_t)m->al->alloc(m->al->user, m->dev, bytes, m->stream);
        rt_cuda_recheck(m->cuda);
        return p;
    }
    rt_cuda_ptr p = 0;
    return rt_cuda_alloc_async(m->cuda, bytes, &p, NULL) == TSL_OK ? p : 0;
}

static void device_mem_free(void *user, rt_ptr p)
{
    device_mem *m = user;
    if (m->al) {
        m->al->free(m->al->user, m->dev, (void *)(uintptr_t)p, m->stream);
        rt_cuda_recheck(m->cuda);
    } else {
        rt_cuda_free_async(m->cuda, p);
    }
}

/* Open the CUDA device (once; under s->mu) and check that it is GPU
 * device_id. */
static tsl_status device_open(target_state *s, int device_id, tsl_diag *d)
{
    if (!s->dev) {
        rt_cuda_device *dev = NULL;
        tsl_status st = rt_cuda_open(&dev, d);
        if (st) {
            unavailable("cuda", d);
            return st;
        }
        s->dev = dev;
    }
    int ord = rt_cuda_device_info(s->dev)->ordinal;
    if (device_id != ord) {
        diag_error(d, TSL_ERR_ARG,
                   "the tensors are on cuda:%d but tessel runs on cuda:%d ($TESSEL_CUDA_DEVICE selects the GPU, "
                   "default 0)", device_id, ord);
        return TSL_ERR_ARG;
    }
    return TSL_OK;
}

tsl_status api_cuda_alloc(int device_id, size_t bytes, void **out, tsl_diag *d)
{
    target_state *s = &states[1];
    *out = NULL;
    pthread_mutex_lock(&s->mu);
    rt_cuda_ptr ptr = 0;
    tsl_status st = device_open(s, device_id, d);
    if (!st) st = rt_cuda_alloc(s->dev, bytes, &ptr, d);
    pthread_mutex_unlock(&s->mu);
    *out = (void *)(uintptr_t)ptr;
    return st;
}

void api_cuda_free(void *p)
{
    target_state *s = &states[1];
    pthread_mutex_lock(&s->mu);
    if (s->dev && p) rt_cuda_free(s->dev, (rt_cuda_ptr)(uintptr_t)p);
    pthread_mutex_unlock(&s->mu);
}

tsl_status api_compiled_run_device(tsl_program *p, const lang_bound *b, const struct interp_tensor *views,
                                   int device_id, void *stream, const tsl_allocator *al, int sync, tsl_diag *d)
{
    const lang_def *def = p->def;
    int n = def->ntensors, heap = n > 16; /* a small def's call allocates nothing */
    rt_ptr ptrs_here[16] = {0};
    double scalars_here[16] = {0};
    rt_ptr *ptrs = heap ? calloc((size_t)n + 1, sizeof *ptrs) : ptrs_here;
    double *scalars = heap ? calloc((size_t)n + 1, sizeof *scalars) : scalars_here;
    if (!ptrs || !scalars) {
        if (heap) free(ptrs);
        if (heap) free(scalars);
        diag_error(d, TSL_ERR_NOMEM, "out of memory");
        return TSL_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        if (def->tensors[i]->is_scalar) scalars[i] = views[i].scalar;
        else ptrs[i] = (rt_ptr)(uintptr_t)views[i].base;
    }
    target_state *s = &states[1];
    pthread_mutex_lock(&s->mu);
    tsl_status st = device_open(s, device_id, d);
    /* the context set once for the whole run, not per driver call */
    if (!st) st = rt_cuda_begin(s->dev, d);
    if (!st) st = rt_cuda_set_stream(s->dev, stream, d);
    rt_exec *e = st ? NULL : prepare(p, &drv_target_cuda, s, &p->opt, p->opt_text, rt_cuda_stream_capturing(s->dev), d, &st);
    device_mem m = {al, {kDLCUDA, device_id}, stream, s->dev};
    rt_mem mem = {device_mem_alloc, device_mem_free, &m};
    if (!st) st = drv_run_device_mem(e, b, ptrs, scalars, sync, &mem, d);
    if (s->dev) {
        rt_cuda_set_stream(s->dev, NULL, NULL);
        rt_cuda_end(s->dev);
    }
    if (st == TSL_ERR_RUNTIME && s->dev) {
        /* a launch error can poison the context: start afresh next run */
        for (int i = 0; i < PREPARED_MAX; i++) prepared_drop(&s->plans[i]);
        rt_cuda_close(s->dev);
        s->dev = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (heap) {
        free(ptrs);
        free(scalars);
    }
    return st;
}
