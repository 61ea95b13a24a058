/* sched_runners.c — the kernel runners of tests/sched_runners.h. */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/cuda.h"
#include "interp/interp.h"
#include "sched_runners.h"
#include "test.h"

static const drv_target *emu_target(void);
static const test_runner runners[] = {
    {&drv_target_tile_interp, 1, 0}, {&drv_target_cpu, 0, 0}, {&drv_target_cuda, 0, 0}, {NULL, 0, 1}};
const test_runner *const test_run_tile_interp = &runners[0], *const test_run_cpu = &runners[1],
                         *const test_run_gpu = &runners[2], *const test_run_cuda_emu = &runners[3];

tsl_status test_plan_run(const sched_plan *p, const lang_bound *b, DLTensor *const *tensors, const double *scalars,
                         const test_runner *r, tsl_diag *d)
{
    const lang_def *def = p->def;
    interp_tensor *views = calloc((size_t)def->ntensors + 1, sizeof *views);
    if (!views) return TSL_ERR_NOMEM;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        views[i].dtype = t->dtype;
        if (t->is_scalar) views[i].scalar = scalars[i];
        if (t->is_scalar || (t->flags & LANG_TENSOR_TEMP) || !tensors[i]) continue;
        views[i].base = tensors[i]->data;
        views[i].rank = t->rank;
        int64_t stride = 1;
        for (int k = t->rank - 1; k >= 0; k--) {
            views[i].shape[k] = b->shapes[i][k];
            views[i].stride[k] = stride;
            stride *= b->shapes[i][k];
        }
    }
    tile_interp_opts o = {.shuffle_blocks = r->shuffle, .seed = test_rand()};
    rt_cuda_device *dev = NULL;
    const drv_target *t = r->emulated ? emu_target() : r->t;
    void *devp = t == &drv_target_tile_interp ? (void *)&o : NULL;
    tsl_status st = t == &drv_target_cuda ? rt_cuda_open(&dev, d) : TSL_OK;
    if (dev) devp = dev;
    if (!st) st = drv_plan_run(def, p, b, views, t, devp, d);
    rt_cuda_close(dev);
    free(views);
    return st;
}

/* ---- the CUDA generator in the host emulation ------------------------------------ */

int test_have_cxx(void)
{
    static int state = -1;
    if (state < 0) state = system("c++ --version >/dev/null 2>&1") == 0;
    if (!state) printf("    skipped: no C++ compiler for the host emulation\n");
    return state;
}

void *test_emu_build(const char *source, const char *tag)
{
    char *hdr_path = NULL, *hdr = NULL, *dir = NULL, *so = NULL, *tmp = NULL, *cu = NULL, *cmd = NULL;
    void *h = NULL;
    tsl_diag d = {0};
    if (asprintf(&hdr_path, "%s/tests/unit/codegen_cuda_emu.h", test_root()) < 0) goto out;
    hdr = file_read_all(hdr_path, NULL);
    if (!hdr || rt_cache_dir("cuda-emu", &dir, &d)) goto out;
    rt_key_part parts[2] = {{source, strlen(source)}, {hdr, strlen(hdr)}};
    char key[33];
    rt_cache_key(parts, 2, key);
    if (asprintf(&so, "%s/%s.so", dir, key) < 0) goto out;
    if (access(so, R_OK) != 0) {
        if (asprintf(&cu, "%s/%s.%d.cpp", dir, key, (int)getpid()) < 0 ||
            asprintf(&tmp, "%s/%s.%d.so", dir, key, (int)getpid()) < 0)
            goto out;
        FILE *f = fopen(cu, "w");
        if (!f) goto out;
        fputs(source, f);
        fclose(f);
        if (asprintf(&cmd, "c++ -std=c++17 -O0 -w -fPIC -shared -include '%s' '%s' -o '%s' -lpthread > '%s.log' 2>&1 || "
                           "head -c 3000 '%s.log'",
                     hdr_path, cu, tmp, cu, cu) < 0)
            goto out;
        int rc = system(cmd);
        char *lg = NULL;
        if (asprintf(&lg, "%s.log", cu) > 0) unlink(lg);
        free(lg);
        unlink(cu);
        if (rc != 0 || rename(tmp, so) != 0) {
            printf("    %s: the emulation did not compile\n", tag);
            unlink(tmp);
            goto out;
        }
    }
    h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) printf("    %s: %s\n", tag, dlerror());
out:
    diag_free(&d);
    free(hdr_path);
    free(hdr);
    free(dir);
    free(so);
    free(tmp);
    free(cu);
    free(cmd);
    return h;
}

static tsl_status emu_fail(tsl_diag *d, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
static tsl_status emu_fail(tsl_diag *d, tsl_status st, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    diag_error(d, st, "%s", buf);
    return st;
}

/* The emulation as a target of the one executor: the "binary" is the
 * CUDA source with the size arms of its variant defined; loading builds it
 * with the host C++ compiler (cached) and finds <entry>_emu; a launch
 * packs the CUDA ABI and runs the grid on host threads. Memory is host
 * memory; index errors come back in the kernel's record, as on a GPU. */
typedef int (*emu_launch_fn)(void (*)(void **), void **, const unsigned *, unsigned, unsigned);

typedef struct emu_module {
    void *h;
    void (*fn)(void **);
    emu_launch_fn launch;
} emu_module;

static const char *emu_arch(void *dev)
{
    (void)dev;
    return "host-emulation";
}

static tsl_status emu_compile(const char *arch, const rt_kernel *k, unsigned variant, void **bin, size_t *size,
                              tsl_diag *d)
{
    (void)arch;
    (void)d;
    strbuf full = {0};
    for (int b = 0; b < k->nbranches; b++) sb_printf(&full, "#define TSL_IF%d %u\n", b, (variant >> (b + 1)) & 1u);
    sb_puts(&full, k->source);
    *size = full.len + 1;
    *bin = sb_take(&full);
    return TSL_OK;
}

static tsl_status emu_load(void *dev, const rt_kernel *k, unsigned variant, const void *bin, size_t size,
                           void **module, void **fn, tsl_diag *d)
{
    (void)dev;
    (void)variant;
    (void)size;
    void *h = test_emu_build(bin, k->name);
    if (!h) return emu_fail(d, TSL_ERR_COMPILE, "kernel '%s': the emulation does not build", k->name);
    char sym[300];
    snprintf(sym, sizeof sym, "%s_emu", k->entry);
    emu_module *m = calloc(1, sizeof *m);
    m->h = h;
    m->fn = (void (*)(void **))dlsym(h, sym);
    m->launch = (emu_launch_fn)dlsym(h, "tsl_emu_launch");
    if (!m->fn || !m->launch) {
        dlclose(h);
        free(m);
        return emu_fail(d, TSL_ERR_INTERNAL, "emulation: no entry '%s'", sym);
    }
    *module = m;
    *fn = m;
    return TSL_OK;
}

static void emu_unload(void *module)
{
    emu_module *m = module;
    if (!m) return;
    dlclose(m->h);
    free(m);
}

static tsl_status emu_launch(void *dev, void *fn, const rt_bound *b, rt_fault *fault, tsl_diag *d)
{
    (void)dev;
    (void)fault;
    const emu_module *m = fn;
    const rt_kernel *k = b->k;
    enum { MAXV = 512 };
    long long vals[MAXV];
    void *params[MAXV];
    int nv = 0;
    for (int q = 0; q < k->nparams; q++) {
        const rt_param *pa = &k->params[q];
        if (!pa->is_tensor) { /* an int, or a float typed scalar's double bits */
            vals[nv] = b->word[q];
            params[nv] = &vals[nv];
            nv++;
            continue;
        }
        vals[nv] = (long long)b->ptr[q];
        params[nv] = &vals[nv];
        nv++;
        for (int i = 0; i < pa->rank; i++) {
            vals[nv] = b->shape[q][i];
            params[nv] = &vals[nv];
            vals[nv + 1] = b->stride[q][i];
            params[nv + 1] = &vals[nv + 1];
            nv += 2;
        }
    }
    for (int s2 = 0; s2 < k->nsyms; s2++) {
        vals[nv] = b->syms[s2];
        params[nv] = &vals[nv];
        nv++;
    }
    vals[nv] = (long long)b->err;
    params[nv] = &vals[nv];
    nv++;
    unsigned grid[3] = {(unsigned)b->grid[0], (unsigned)b->grid[1], (unsigned)b->grid[2]};
    if (m->launch(m->fn, params, grid, (unsigned)k->threads, (unsigned)k->smem))
        return emu_fail(d, TSL_ERR_RUNTIME, "emulation: the launch of '%s' failed", k->name);
    return TSL_OK;
}

/* memory and timing: the CPU target's (host memory) */
static tsl_status emu_alloc(void *dev, size_t n, rt_ptr *out, tsl_diag *d) { return rt_target_cpu.alloc(dev, n, out, d); }
static void emu_free(void *dev, rt_ptr p) { rt_target_cpu.free(dev, p); }
static tsl_status emu_copy(void *dev, rt_ptr a, rt_ptr b, size_t n, rt_copy_kind k, tsl_diag *d)
{
    return rt_target_cpu.copy(dev, a, b, n, k, d);
}
static tsl_status emu_memset(void *dev, rt_ptr p, int v, size_t n, tsl_diag *d) { return rt_target_cpu.memset(dev, p, v, n, d); }
static tsl_status emu_sync(void *dev, tsl_diag *d) { return rt_target_cpu.sync(dev, d); }
static tsl_status emu_ev_create(void *dev, void **ev, tsl_diag *d) { return rt_target_cpu.event_create(dev, ev, d); }
static tsl_status emu_ev_record(void *dev, void *ev, tsl_diag *d) { return rt_target_cpu.event_record(dev, ev, d); }
static tsl_status emu_ev_elapsed(void *dev, void *a, void *b, double *ms, tsl_diag *d)
{
    return rt_target_cpu.event_elapsed(dev, a, b, ms, d);
}
static void emu_ev_destroy(void *dev, void *ev) { rt_target_cpu.event_destroy(dev, ev); }
static int emu_units(void *dev)
{
    (void)dev;
    return 4;
}

static const rt_target emu_rt = {
    .name = "cuda-emulation",
    .host_memory = 1,
    .index_variants = 1,
    .fault_records = 1,
    .arch = emu_arch,
    .toolchain = emu_arch,
    .units = emu_units,
    .compile = emu_compile,
    .load = emu_load,
    .unload = emu_unload,
    .launch = emu_launch,
    .alloc = emu_alloc,
    .free = emu_free,
    .copy = emu_copy,
    .memset = emu_memset,
    .sync = emu_sync,
    .event_create = emu_ev_create,
    .event_record = emu_ev_record,
    .event_elapsed = emu_ev_elapsed,
    .event_destroy = emu_ev_destroy,
};

/* The CUDA target with the emulation for a runtime (its emit is CUDA's). */
static const drv_target *emu_target(void)
{
    static drv_target t;
    static int made;
    if (!made) {
        t = drv_target_cuda;
        t.name = "cuda-emulation";
        t.rt = &emu_rt;
        made = 1;
    }
    return &t;
}

tsl_status test_nvrtc_arms(const tile_module *m, const tile_kernel *k, const char *arch, rt_ptxas_report *worst,
                           int *narms, tsl_diag *d)
{
    memset(worst, 0, sizeof *worst);
    *narms = 0;
    strbuf src = {0};
    cg_cuda_branches br;
    tsl_status st = cg_cuda_emit_branches(m, k, &src, &br, d);
    unsigned leaves[64];
    int n = st ? 0 : cg_cuda_branch_leaves(&br, leaves, 64);
    for (int lf = 0; !st && lf < n && lf < 64; lf++) {
        char defs[CG_CUDA_MAX_BRANCHES][24];
        const char *extra[CG_CUDA_MAX_BRANCHES];
        for (int b = 0; b < br.n; b++) {
            snprintf(defs[b], sizeof defs[b], "-DTSL_IF%d=%u", b, (leaves[lf] >> b) & 1u);
            extra[b] = defs[b];
        }
        rt_cuda_options o = {0};
        o.ptxas_verbose = 1;
        o.name = k->name;
        o.extra = extra;
        o.n_extra = br.n;
        void *cubin = NULL;
        size_t bytes = 0;
        char *log = NULL;
        st = rt_cuda_compile(sb_str(&src), arch, &o, &cubin, &bytes, &log, d);
        if (!st) {
            rt_ptxas_report r;
            rt_cuda_ptxas_parse(log, &r);
            worst->found += r.found >= 1;
            if (r.registers > worst->registers) worst->registers = r.registers;
            if (r.spill_stores > worst->spill_stores) worst->spill_stores = r.spill_stores;
            if (r.spill_loads > worst->spill_loads) worst->spill_loads = r.spill_loads;
            if (r.stack_frame > worst->stack_frame) worst->stack_frame = r.stack_frame;
            (*narms)++;
        }
        free(cubin);
        free(log);
    }
    sb_free(&src);
    return st;
}

/* Run def on sizes sz with the reference interpreter and the plan through
 * on r's target; compare every output. */
/* ---- one plan against the interpreter (sched_runners.h) ------------------------ */

static void draw_store_int(tsl_dtype t, void *p, int64_t v)
{
    if (t == TSL_DTYPE_BOOL) v = v != 0;
    uint64_t u = (uint64_t)v;
    unsigned char b[8];
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(u >> (8 * k));
    memcpy(p, b, tsl_dtype_size(t));
}

static int64_t draw_load_int(tsl_dtype t, const void *p)
{
    size_t n = tsl_dtype_size(t);
    unsigned char b[8] = {0};
    memcpy(b, p, n);
    uint64_t u = 0;
    for (size_t k = 0; k < n; k++) u |= (uint64_t)b[k] << (8 * k);
    if (n < 8 && dtype_info_of(t)->is_signed && ((u >> (8 * n - 1)) & 1)) u |= ~UINT64_C(0) << (8 * n);
    return (int64_t)u;
}

void test_plan_data_make(tsl_arena *a, const lang_def *def, lang_bound *b, const test_plan_fill *f,
                         test_plan_data *c)
{
    int n = def->ntensors;
    *c = (test_plan_data){.def = def, .b = b};
    c->ref = arena_alloc(a, sizeof *c->ref * (size_t)(n + 1));
    c->got = arena_alloc(a, sizeof *c->got * (size_t)(n + 1));
    c->cnt = arena_alloc(a, sizeof *c->cnt * (size_t)(n + 1));
    c->dls = arena_alloc(a, sizeof *c->dls * (size_t)(n + 1));
    c->scal = arena_alloc(a, sizeof *c->scal * (size_t)(n + 1));
    c->views = arena_alloc(a, sizeof *c->views * (size_t)(n + 1));
    DLTensor *dlv = arena_alloc(a, sizeof *dlv * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        c->views[i].dtype = t->dtype;
        if (t->is_scalar) {
            c->scal[i] = c->views[i].scalar = f && f->scalar ? f->scalar(t, f->ctx) : test_rand_double(0.5, 1.5);
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        c->cnt[i] = 1;
        for (int k = 0; k < t->rank; k++) c->cnt[i] *= b->shapes[i][k];
        size_t bytes = tsl_dtype_nbytes(t->dtype, c->cnt[i]);
        int in = (t->flags & LANG_TENSOR_INPUT) != 0;
        c->ref[i] = arena_alloc(a, bytes + 1);
        c->got[i] = f && f->alloc ? f->alloc(bytes, f->ctx) : arena_alloc(a, bytes + 1);
        int isf = dtype_info_of(t->dtype)->is_float;
        if (in && f && f->input) {
            f->input(t, c->ref[i], c->cnt[i], f->ctx);
        } else if (in) {
            for (int64_t e = 0; e < c->cnt[i]; e++)
                dtype_set(t->dtype, c->ref[i], e, isf ? test_rand_double(-1.0, 1.0) : (double)test_rand_int(1, 9));
        } else if (isf) { /* poison */
            for (int64_t e = 0; e < c->cnt[i]; e++) dtype_set(t->dtype, c->ref[i], e, NAN);
        } else {
            memset(c->ref[i], 0xA5, bytes);
        }
        memcpy(c->got[i], c->ref[i], bytes);
        c->views[i].base = c->ref[i];
        c->views[i].rank = t->rank;
        int64_t stride = 1;
        for (int k = t->rank - 1; k >= 0; k--) {
            c->views[i].shape[k] = b->shapes[i][k];
            c->views[i].stride[k] = stride;
            stride *= b->shapes[i][k];
        }
        dlv[i].data = c->got[i];
        dlv[i].device.device_type = kDLCPU;
        dlv[i].ndim = t->rank;
        dlv[i].dtype = tsl_dtype_to_dlpack(t->dtype);
        dlv[i].shape = b->shapes[i];
        c->dls[i] = &dlv[i];
    }
}

tsl_status test_plan_data_run(test_plan_data *c, const sched_plan *p, const test_runner *r, const char *label)
{
    tsl_diag d = {0};
    tsl_status st = test_plan_run(p, c->b, c->dls, c->scal, r, &d);
    CHECK_MSG(st == TSL_OK, "%s: run failed: %s", label, sb_str(&d.msg));
    diag_free(&d);
    return st;
}

tsl_status test_plan_round_trip(tsl_arena *a, const sched_plan *p, const char *name)
{
    tsl_diag d = {0};
    tsl_status st = tile_verify(p->m, NULL, &d);
    char *t1 = tile_print(p->m);
    CHECK_MSG(st == TSL_OK, "%s: the schedule does not verify: %s\n%s", name, sb_str(&d.msg), t1);
    tsl_source src = {name, t1};
    tile_module *m2 = NULL;
    diag_reset(&d);
    if (!st) st = tile_parse(a, &src, &d, &m2);
    CHECK_MSG(st == TSL_OK, "%s: the printed schedule does not parse: %s", name, sb_str(&d.msg));
    if (m2) {
        char *t2 = tile_print(m2);
        CHECK_MSG(!strcmp(t1, t2), "%s: print/parse/print differs", name);
        free(t2);
    }
    free(t1);
    diag_free(&d);
    return st;
}

/* The root mean square of output i's reference values. */
static double ref_rms(const test_plan_data *c, int i)
{
    const lang_tensor *t = c->def->tensors[i];
    double s = 0;
    for (int64_t e = 0; e < c->cnt[i]; e++) {
        double x = dtype_get(t->dtype, c->ref[i], e);
        if (isfinite(x)) s += x * x;
    }
    return c->cnt[i] ? sqrt(s / (double)c->cnt[i]) : 0;
}

int test_plan_data_compare(const test_plan_data *c, int i, double tol, int maxbad, const char *label)
{
    return test_plan_data_compare_floor(c, i, tol, 0, maxbad, label);
}

int test_plan_data_compare_floor(const test_plan_data *c, int i, double tol, double floor, int maxbad,
                                 const char *label)
{
    const lang_tensor *t = c->def->tensors[i];
    size_t es = tsl_dtype_size(t->dtype);
    int isf = dtype_info_of(t->dtype)->is_float || es == 0; /* packed low-bit: by value */
    int bad = 0;
    for (int64_t e = 0; e < c->cnt[i] && bad < maxbad; e++) {
        int ok;
        char msg[160];
        if (isf) {
            double x = dtype_get(t->dtype, c->ref[i], e), y = dtype_get(t->dtype, c->got[i], e);
            ok = (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= tol * (1.0 + floor + fabs(x));
            snprintf(msg, sizeof msg, "%.9g, the interpreter's %.9g", y, x);
        } else {
            int64_t x = draw_load_int(t->dtype, (const char *)c->ref[i] + (size_t)e * es);
            int64_t y = draw_load_int(t->dtype, (const char *)c->got[i] + (size_t)e * es);
            ok = x == y;
            snprintf(msg, sizeof msg, "%lld (0x%llx), the interpreter's %lld (0x%llx)", (long long)y,
                     (unsigned long long)y, (long long)x, (unsigned long long)x);
        }
        if (ok) continue;
        bad++;
        CHECK_MSG(0, "%s: %s[%lld] (%s) is %s", label, t->name, (long long)e, tsl_dtype_name(t->dtype), msg);
    }
    return bad;
}

/* Bind def at sz (a failure CHECKed); NULL when it does not bind. */
static lang_bound *bind_checked(tsl_arena *a, const lang_def *def, const int64_t *sz)
{
    tsl_diag d = {0};
    lang_bound *b = NULL;
    tsl_status st = lang_bind(a, def, sz, &b, &d);
    CHECK_MSG(st == TSL_OK, "%s: binding sizes failed: %s", def->name, sb_str(&d.msg));
    diag_free(&d);
    return st ? NULL : b;
}

/* The interpreter on c's ref (a failure CHECKed); TSL_OK when it ran. */
static tsl_status reference_checked(test_plan_data *c)
{
    tsl_diag d = {0};
    tsl_status st = interp_run(c->b, c->views, &d);
    CHECK_MSG(st == TSL_OK, "%s: reference run failed: %s", c->def->name, sb_str(&d.msg));
    diag_free(&d);
    return st;
}

void test_compare_plan(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz,
                       const test_runner *r, const char *what)
{
    lang_bound *b = bind_checked(a, def, sz);
    if (!b) return;
    test_plan_data c;
    test_plan_data_make(a, def, b, NULL, &c);
    char label[256];
    snprintf(label, sizeof label, "%s (%s, sizes %lld %lld %lld)", def->name, what, (long long)sz[0],
             (long long)(def->nsizes > 1 ? sz[1] : 0), (long long)(def->nsizes > 2 ? sz[2] : 0));
    if (reference_checked(&c) || test_plan_data_run(&c, p, r, label)) return;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (!(t->flags & LANG_TENSOR_OUTPUT)) continue;
        /* A 16-bit kernel keeps a statement's result in f32 where the
         * reference rounds it to the tensor's dtype (a layer's output
         * before its bias, say). The difference is an ulp or so of each
         * term of the next reduction: it scales with the output's
         * magnitude, not the element's, and where a ReLU or a bias
         * cancels a large sum it passes tol * (1 + |x|). So 16-bit
         * outputs are held to tol * (1 + rms / 4 + |x|). Simulated for
         * mlp2h at sizes 130 64 256 over 200 draws: the worst error is
         * 0.0065 of that bound's unit against tol 0.02, where without the
         * rms term one draw in seven failed. */
        int half = t->dtype == TSL_DTYPE_F16 || t->dtype == TSL_DTYPE_BF16;
        test_plan_data_compare_floor(&c, i, t->dtype == TSL_DTYPE_F16 ? 2e-2 : half ? 5e-2 : 2e-4,
                                     half ? ref_rms(&c, i) / 4 : 0, 3, label);
    }
}

/* test_compare_plan_draw's inputs: dr's hooks per element, else floats
 * +-[0.1, 1] and integers +-[1, 9] (unsigned [1, 9]). */
static void draw_input(const lang_tensor *t, void *data, int64_t n, void *ctx)
{
    const test_draw *dr = ctx;
    size_t es = tsl_dtype_size(t->dtype);
    int isf = dtype_info_of(t->dtype)->is_float;
    for (int64_t e = 0; e < n; e++) {
        char *at = (char *)data + (size_t)e * es;
        if (isf) {
            double v = dr && dr->float_value ? dr->float_value(t->dtype, dr->ctx)
                                             : (test_rand_int(0, 1) ? 1 : -1) * test_rand_double(0.1, 1.0);
            dtype_store(t->dtype, at, v);
        } else {
            int64_t v = dr && dr->int_value ? dr->int_value(t->dtype, dr->ctx) : test_rand_int(1, 9);
            if (!(dr && dr->int_value) && dtype_info_of(t->dtype)->is_signed && test_rand_int(0, 1)) v = -v;
            draw_store_int(t->dtype, at, v);
        }
    }
}

static void *draw_alloc(size_t bytes, void *ctx)
{
    const test_draw *dr = ctx;
    return dr->alloc(bytes, dr->ctx);
}

static double draw_scalar(const lang_tensor *t, void *ctx)
{
    const test_draw *dr = ctx;
    return dr->scalar_value(t->dtype, dr->ctx);
}

int test_compare_plan_draw(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz,
                           const test_runner *fn, const char *what, const test_draw *dr)
{
    lang_bound *b = bind_checked(a, def, sz);
    if (!b) return 1;
    test_draw none = {0};
    test_plan_fill f = {.input = draw_input,
                        .alloc = dr && dr->alloc ? draw_alloc : NULL,
                        .ctx = (void *)(dr ? dr : &none),
                        .scalar = dr && dr->scalar_value ? draw_scalar : NULL};
    test_plan_data c;
    test_plan_data_make(a, def, b, &f, &c);
    char label[256];
    snprintf(label, sizeof label, "%s (%s, sizes %lld %lld %lld)", def->name, what, (long long)sz[0],
             (long long)(def->nsizes > 1 ? sz[1] : 0), (long long)(def->nsizes > 2 ? sz[2] : 0));
    if (reference_checked(&c) || test_plan_data_run(&c, p, fn, label)) return 1;
    int bad = 0;
    for (int i = 0; i < def->ntensors; i++) {
        const lang_tensor *t = def->tensors[i];
        if (!(t->flags & LANG_TENSOR_OUTPUT)) continue;
        double tol = dr && dr->tol > 0 ? dr->tol
                     : t->dtype == TSL_DTYPE_F16 ? 2e-3 : t->dtype == TSL_DTYPE_BF16 ? 1e-2 : 1e-6;
        bad += test_plan_data_compare(&c, i, tol, 1, label) > 0;
    }
    return bad;
}
