/* sched_runners.c — the kernel runners of tests/sched_runners.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
