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

tsl_status test_run_tile_interp(void *ctx, const tile_module *m, const tile_kernel *k,
                                const tile_interp_arg *args, int nargs, tsl_diag *d)
{
    (void)ctx;
    (void)m;
    tile_interp_opts o;
    memset(&o, 0, sizeof o);
    o.shuffle_blocks = 1;
    o.seed = test_rand();
    return tile_interp_run(k, NULL, args, nargs, &o, d);
}

tsl_status test_run_cpu(void *ctx, const tile_module *m, const tile_kernel *k,
                        const tile_interp_arg *args, int nargs, tsl_diag *d)
{
    (void)ctx;
    return cg_c_run(m, k, args, nargs, d);
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

typedef struct emu_syms {
    const tile_kernel *k;
    const int64_t *symv;
    const tile_interp_arg *args;
    int nargs;
} emu_syms;

static int64_t emu_lookup(void *ctx, const tile_value *v, int *ok)
{
    const emu_syms *e = ctx;
    for (int i = 0; i < e->k->nsyms; i++)
        if (e->k->syms[i] == v) return e->symv[i];
    for (int i = 0; i < e->nargs; i++)
        if (!e->args[i].t && e->args[i].name && !strcmp(e->args[i].name, v->name)) return e->args[i].ival;
    *ok = 0;
    return 0;
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

typedef int (*emu_launch_fn)(void (*)(void **), void **, const unsigned *, unsigned, unsigned);

tsl_status test_run_cuda_emu(void *ctx, const tile_module *m, const tile_kernel *k,
                             const tile_interp_arg *args, int nargs, tsl_diag *d)
{
    (void)ctx;
    enum { MAXV = 512 };
    int64_t symv[64] = {0};
    if (k->nsyms > 64 || k->nparams > 48) return emu_fail(d, TSL_ERR_UNAVAILABLE, "emulation: kernel too large");
    tsl_status st = tile_interp_bind_symbols(k, args, nargs, NULL, NULL, 0, symv, d);
    if (st) return st;
    emu_syms es = {k, symv, args, nargs};
    strbuf src = {0}, full = {0};
    cg_cuda_branches br;
    if ((st = cg_cuda_emit_branches(m, k, &src, &br, d))) {
        sb_free(&src);
        return st;
    }
    /* the arms these sizes take, as the CUDA runtime compiles them */
    for (int b = 0; b < br.n; b++) {
        int ok = 1;
        int64_t v = tile_expr_eval(br.cond[b], emu_lookup, &es, NULL, -1, &ok);
        if (ok) sb_printf(&full, "#define TSL_IF%d %d\n", b, v ? 1 : 0);
    }
    sb_puts(&full, sb_str(&src));
    sb_free(&src);
    void *h = test_emu_build(sb_str(&full), k->name);
    sb_free(&full);
    if (!h) return emu_fail(d, TSL_ERR_COMPILE, "kernel '%s': the emulation does not build", k->name);
    char entry[160], sym[200];
    cg_cuda_entry_name(k->name, entry, sizeof entry);
    snprintf(sym, sizeof sym, "%s_emu", entry);
    void (*fn)(void **) = (void (*)(void **))dlsym(h, sym);
    emu_launch_fn launch = (emu_launch_fn)dlsym(h, "tsl_emu_launch");
    long long vals[MAXV];
    void *params[MAXV];
    int nv = 0;
    for (int p = 0; p < k->nparams && !st; p++) {
        const tile_value *v = k->params[p];
        const tile_interp_arg *a = NULL;
        for (int i = 0; i < nargs; i++)
            if (args[i].name && !strcmp(args[i].name, v->name)) a = &args[i];
        if (!a) {
            st = emu_fail(d, TSL_ERR_ARG, "emulation: parameter '%s' is not bound", v->name);
            break;
        }
        if (v->kind == TILE_V_SCALAR) { /* int, or a float typed scalar's double bits */
            vals[nv] = a->ival;
            params[nv] = &vals[nv];
            nv++;
            continue;
        }
        const DLTensor *t = a->t;
        vals[nv] = (long long)(uintptr_t)t->data;
        params[nv] = &vals[nv];
        nv++;
        int64_t stride = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            vals[nv + 2 * i] = t->shape[i];
            vals[nv + 2 * i + 1] = t->strides ? t->strides[i] : stride;
            stride *= t->shape[i];
        }
        for (int i = 0; i < 2 * t->ndim; i++) params[nv + i] = &vals[nv + i];
        nv += 2 * t->ndim;
    }
    for (int s2 = 0; s2 < k->nsyms; s2++) {
        vals[nv] = symv[s2];
        params[nv] = &vals[nv];
        nv++;
    }
    unsigned long long err[8] = {0};
    vals[nv] = (long long)(uintptr_t)err;
    params[nv] = &vals[nv];
    nv++;
    unsigned grid[3] = {1, 1, 1};
    for (int i = 0; i < k->ngrid && !st; i++) {
        int ok = 1;
        int64_t g = tile_expr_eval(k->grid[i], emu_lookup, &es, NULL, -1, &ok);
        if (!ok || g < 0) st = emu_fail(d, TSL_ERR_SHAPE, "emulation: grid %d does not evaluate", i);
        else grid[i] = (unsigned)g;
    }
    int64_t smem = st ? 0 : cg_cuda_smem_bytes(m, k, d);
    if (!st && smem < 0) st = TSL_ERR_INTERNAL;
    if (!st && (!fn || !launch)) st = emu_fail(d, TSL_ERR_INTERNAL, "emulation: no entry '%s'", sym);
    if (!st && grid[0] && grid[1] && grid[2]) {
        if (launch(fn, params, grid, (unsigned)k->threads, (unsigned)smem))
            st = emu_fail(d, TSL_ERR_RUNTIME, "emulation: the launch of '%s' failed", k->name);
        else if (err[0])
            st = emu_fail(d, TSL_ERR_BOUNDS, "kernel '%s': index %lld out of range (param %llu, dim %llu)", k->name,
                            (long long)err[3], err[1], err[2]);
    }
    dlclose(h);
    return st;
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
 * fn; compare every output. */
void test_compare_plan(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz,
                        sched_kernel_fn fn, const char *what)
{
    tsl_diag d = {0};
    lang_bound *b = NULL;
    tsl_status st = lang_bind(a, def, sz, &b, &d);
    CHECK_MSG(st == TSL_OK, "%s: binding sizes failed: %s", def->name, sb_str(&d.msg));
    if (st) {
        diag_free(&d);
        return;
    }
    int n = def->ntensors;
    void **ref = arena_alloc(a, sizeof *ref * (size_t)(n + 1));
    void **got = arena_alloc(a, sizeof *got * (size_t)(n + 1));
    DLTensor **dls = arena_alloc(a, sizeof *dls * (size_t)(n + 1));
    DLTensor *dlv = arena_alloc(a, sizeof *dlv * (size_t)(n + 1));
    double *scal = arena_alloc(a, sizeof *scal * (size_t)(n + 1));
    interp_tensor *views = arena_alloc(a, sizeof *views * (size_t)(n + 1));
    int64_t *cnt = arena_alloc(a, sizeof *cnt * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        views[i].dtype = t->dtype;
        if (t->is_scalar) {
            scal[i] = views[i].scalar = test_rand_double(0.5, 1.5);
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        cnt[i] = 1;
        for (int k = 0; k < t->rank; k++) cnt[i] *= b->shapes[i][k];
        size_t bytes = (size_t)cnt[i] * tsl_dtype_size(t->dtype);
        ref[i] = arena_alloc(a, bytes + 1);
        got[i] = arena_alloc(a, bytes + 1);
        for (int64_t e = 0; e < cnt[i]; e++) {
            double v = (t->flags & LANG_TENSOR_INPUT) ? test_rand_double(-1.0, 1.0) : NAN;
            dtype_store(t->dtype, (char *)ref[i] + (size_t)e * tsl_dtype_size(t->dtype), v);
        }
        memcpy(got[i], ref[i], bytes);
        views[i].base = ref[i];
        views[i].rank = t->rank;
        int64_t stride = 1;
        for (int k = t->rank - 1; k >= 0; k--) {
            views[i].shape[k] = b->shapes[i][k];
            views[i].stride[k] = stride;
            stride *= b->shapes[i][k];
        }
        dlv[i].data = got[i];
        dlv[i].device.device_type = kDLCPU;
        dlv[i].ndim = t->rank;
        dlv[i].dtype = tsl_dtype_to_dlpack(t->dtype);
        dlv[i].shape = b->shapes[i];
        dls[i] = &dlv[i];
    }
    st = interp_run(b, views, &d);
    CHECK_MSG(st == TSL_OK, "%s: reference run failed: %s", def->name, sb_str(&d.msg));
    diag_reset(&d);
    tsl_status st2 = st ? st : sched_run(p, b, dls, scal, fn, NULL, &d);
    CHECK_MSG(st2 == TSL_OK, "%s (%s): run failed: %s", def->name, what, sb_str(&d.msg));
    diag_free(&d);
    if (st || st2) return;
    for (int i = 0; i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (!(t->flags & LANG_TENSOR_OUTPUT)) continue;
        double tol = t->dtype == TSL_DTYPE_F16 ? 2e-2 : t->dtype == TSL_DTYPE_BF16 ? 5e-2 : 2e-4;
        int bad = 0;
        for (int64_t e = 0; e < cnt[i] && bad < 3; e++) {
            double x = dtype_load(t->dtype, (char *)ref[i] + (size_t)e * tsl_dtype_size(t->dtype));
            double y = dtype_load(t->dtype, (char *)got[i] + (size_t)e * tsl_dtype_size(t->dtype));
            int ok = !isnan(y) && fabs(x - y) <= tol * (1.0 + fabs(x));
            if (!ok) bad++;
            CHECK_MSG(ok, "%s (%s, sizes %lld %lld %lld): %s[%lld] = %.9g, reference %.9g", def->name, what,
                      (long long)sz[0], (long long)sz[1], (long long)sz[2], t->name, (long long)e, y, x);
        }
    }
}

/* ---- comparisons with chosen inputs and exact integers -------------------------- */

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

int test_compare_plan_draw(tsl_arena *a, const lang_def *def, const sched_plan *p, const int64_t *sz,
                           sched_kernel_fn fn, const char *what, const test_draw *dr)
{
    tsl_diag d = {0};
    lang_bound *b = NULL;
    tsl_status st = lang_bind(a, def, sz, &b, &d);
    CHECK_MSG(st == TSL_OK, "%s: binding sizes failed: %s", def->name, sb_str(&d.msg));
    if (st) {
        diag_free(&d);
        return 1;
    }
    int n = def->ntensors;
    void **ref = arena_alloc(a, sizeof *ref * (size_t)(n + 1));
    void **got = arena_alloc(a, sizeof *got * (size_t)(n + 1));
    int64_t *cnt = arena_alloc(a, sizeof *cnt * (size_t)(n + 1));
    DLTensor **dls = arena_alloc(a, sizeof *dls * (size_t)(n + 1));
    DLTensor *dlv = arena_alloc(a, sizeof *dlv * (size_t)(n + 1));
    double *scal = arena_alloc(a, sizeof *scal * (size_t)(n + 1));
    interp_tensor *views = arena_alloc(a, sizeof *views * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        views[i].dtype = t->dtype;
        if (t->is_scalar) {
            scal[i] = views[i].scalar = test_rand_double(0.5, 1.5);
            continue;
        }
        if (t->flags & LANG_TENSOR_TEMP) continue;
        cnt[i] = 1;
        for (int k = 0; k < t->rank; k++) cnt[i] *= b->shapes[i][k];
        size_t es = tsl_dtype_size(t->dtype);
        ref[i] = arena_alloc(a, (size_t)cnt[i] * es + 1);
        got[i] = dr && dr->alloc ? dr->alloc((size_t)cnt[i] * es, dr->ctx) : arena_alloc(a, (size_t)cnt[i] * es + 1);
        int isf = dtype_info_of(t->dtype)->is_float;
        for (int64_t e = 0; e < cnt[i]; e++) {
            char *at = (char *)ref[i] + (size_t)e * es;
            if (!(t->flags & LANG_TENSOR_INPUT)) { /* poison */
                if (isf) dtype_store(t->dtype, at, NAN);
                else memset(at, 0xA5, es);
            } else if (isf) {
                double v = dr && dr->float_value ? dr->float_value(t->dtype, dr->ctx)
                                                 : (test_rand_int(0, 1) ? 1 : -1) * test_rand_double(0.1, 1.0);
                dtype_store(t->dtype, at, v);
            } else {
                int64_t v = dr && dr->int_value ? dr->int_value(t->dtype, dr->ctx) : test_rand_int(1, 9);
                if (!(dr && dr->int_value) && dtype_info_of(t->dtype)->is_signed && test_rand_int(0, 1)) v = -v;
                draw_store_int(t->dtype, at, v);
            }
        }
        memcpy(got[i], ref[i], (size_t)cnt[i] * es);
        views[i].base = ref[i];
        views[i].rank = t->rank;
        int64_t stride = 1;
        for (int k = t->rank - 1; k >= 0; k--) {
            views[i].shape[k] = b->shapes[i][k];
            views[i].stride[k] = stride;
            stride *= b->shapes[i][k];
        }
        dlv[i].data = got[i];
        dlv[i].device.device_type = kDLCPU;
        dlv[i].ndim = t->rank;
        dlv[i].dtype = tsl_dtype_to_dlpack(t->dtype);
        dlv[i].shape = b->shapes[i];
        dls[i] = &dlv[i];
    }
    st = interp_run(b, views, &d);
    CHECK_MSG(st == TSL_OK, "%s: the interpreter fails: %s", def->name, sb_str(&d.msg));
    diag_reset(&d);
    tsl_status st2 = st ? st : sched_run(p, b, dls, scal, fn, NULL, &d);
    CHECK_MSG(st2 == TSL_OK, "%s (%s): %s", def->name, what, sb_str(&d.msg));
    diag_free(&d);
    if (st || st2) return 1;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const lang_tensor *t = def->tensors[i];
        if (!(t->flags & LANG_TENSOR_OUTPUT)) continue;
        size_t es = tsl_dtype_size(t->dtype);
        int isf = dtype_info_of(t->dtype)->is_float;
        double tol = dr && dr->tol > 0 ? dr->tol
                     : t->dtype == TSL_DTYPE_F16 ? 2e-3 : t->dtype == TSL_DTYPE_BF16 ? 1e-2 : 1e-6;
        for (int64_t e = 0; e < cnt[i]; e++) {
            const char *rp = (const char *)ref[i] + (size_t)e * es, *gp = (const char *)got[i] + (size_t)e * es;
            int ok;
            char msg[160];
            if (isf) {
                double x = dtype_load(t->dtype, rp), y = dtype_load(t->dtype, gp);
                ok = (isnan(x) && isnan(y)) || fabs(x - y) <= tol * (1.0 + fabs(x)) || x == y;
                snprintf(msg, sizeof msg, "%.9g, the interpreter's %.9g", y, x);
            } else {
                int64_t x = draw_load_int(t->dtype, rp), y = draw_load_int(t->dtype, gp);
                ok = x == y;
                snprintf(msg, sizeof msg, "%lld (0x%llx), the interpreter's %lld (0x%llx)", (long long)y,
                         (unsigned long long)y, (long long)x, (unsigned long long)x);
            }
            if (ok) continue;
            CHECK_MSG(0, "%s (%s, sizes %lld %lld %lld): %s[%lld] (%s) is %s", def->name, what, (long long)sz[0],
                      (long long)sz[1], (long long)sz[2], t->name, (long long)e, tsl_dtype_name(t->dtype), msg);
            bad++;
            break;
        }
    }
    return bad;
}
