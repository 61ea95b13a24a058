/* bench.c — tsl_program_bench (tessel.h): the one way tessel times a
 * program. Compile once (measured cold, with no cache lookups, and again
 * with the cache: what a new process pays), check the output against the
 * interpreter before anything is timed, then time whole plan runs with
 * tensors resident on the device and input sets rotated past the
 * last-level cache (src/tune/measure.c); last, the end-to-end cost of a
 * cached tsl_program_run of the same arguments. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "driver/driver.h"
#include "runtime/runtime.h"
#include "tune/tune.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}


tsl_status tsl_program_bench(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, tsl_target target,
                             const tsl_bench_config *cfg, tsl_bench_result *out)
{
    if (!p) return TSL_ERR_ARG;
    tsl_context *ctx = p->ctx;
    if (!out) return api_error(ctx, TSL_ERR_ARG, "tsl_program_bench: out is NULL");
    memset(out, 0, sizeof *out);
    if (api_target_check(ctx, target, "tsl_program_bench")) return TSL_ERR_ARG;
    const drv_target *t = drv_target_of(target);
    if (!t) return api_error(ctx, TSL_ERR_ARG, "tsl_program_bench: target %s is not a compiled target",
                             tsl_target_name(target));
    tsl_bench_config c = cfg ? *cfg : (tsl_bench_config){0};
    if (c.budget_s <= 0) c.budget_s = 2;
    if (c.min_reps <= 0) c.min_reps = 5;
    if (c.max_reps <= 0) c.max_reps = 10000;
    interp_tensor *views = NULL, *cv = NULL;
    char **owned = NULL;
    tsl_status st = api_args_views(p, a, &views);
    if (!st) st = api_args_carry(p, views, &cv, &owned);
    if (st) {
        free(views);
        return st;
    }
    tsl_diag *d = api_diag(ctx);
    diag_reset(d);
    const lang_bound *b = api_args_bound(a);
    rt_cuda_device *cdev = NULL;
    void *dev = NULL;
    if (target == TSL_TARGET_CUDA) {
        st = rt_cuda_open(&cdev, d);
        dev = cdev;
    }
    sched_options opt;
    strbuf text = {0};
    if (!st) {
        out->tuned = api_run_options(p, t, dev, b, &opt, &text);
        snprintf(out->options, sizeof out->options, "%s", sb_str(&text));
    }
    /* cold: nothing from the cache (what it builds is still stored) */
    drv_prepared *pp = NULL, *warm = NULL;
    if (!st) {
        drv_executable *x = NULL;
        drv_options o = {.sched = &opt};
        rt_cache_set_bypass(1);
        double t0 = now_ms();
        st = drv_compile(p->def, t, t->rt->arch(dev), &o, &x, d);
        if (!st) st = drv_prepare(x, t, dev, &pp, d);
        out->cold_compile_ms = now_ms() - t0;
        rt_cache_set_bypass(0);
    }
    if (!st) { /* the cache stores the program, then serves it */
        st = api_prepare_cached(p, t, dev, &opt, sb_str(&text), &warm, d);
        drv_prepared_free(warm);
        warm = NULL;
        double t0 = now_ms();
        if (!st) st = api_prepare_cached(p, t, dev, &opt, sb_str(&text), &warm, d);
        out->cached_prepare_ms = now_ms() - t0;
        drv_prepared_free(warm);
    }
    sb_free(&text);
    rt_exec *e = pp ? drv_prepared_exec(pp) : NULL;
    tune_case tc = {p->def, b, cv};
    if (!st) {
        if (tune_ref_affordable(&tc, TUNE_INTERP_OPS)) {
            tune_ref ref;
            st = tune_ref_make(&tc, &ref, d);
            if (!st) st = tune_check(e, &tc, &ref, &out->check_error, d);
            tune_ref_free(&ref);
        } else {
            out->check_reduced = 1;
            st = tune_check_reduced(e, p->def, b, TUNE_CUT, TUNE_INTERP_OPS, &out->check_error, d);
        }
    }
    tune_bufs *bufs = NULL;
    if (!st) st = tune_bufs_create(e, &tc, (size_t)4 << 30, &bufs, d);
    tune_timing tm = {0};
    if (!st) st = tune_time(e, bufs, &tc, c.budget_s * 1e3, c.min_reps, c.max_reps, &tm, d);
    if (!st) {
        out->median_ms = tm.median_ms;
        out->p10_ms = tm.p10_ms;
        out->p90_ms = tm.p90_ms;
        out->min_ms = tm.min_ms;
        out->reps = tm.reps;
        out->sets = tune_bufs_sets(bufs);
        tune_work(p->def, b, &out->flops, &out->bytes);
    }
    tune_bufs_free(bufs);
    drv_prepared_free(pp);
    rt_cuda_close(cdev);
    api_args_uncarry(p, views, cv, owned, 0);
    free(views);
    /* a cached call of the whole API: views, copies, the runs, back */
    if (!st) {
        int n = out->median_ms > 0 ? (int)(c.budget_s * 1e3 / 4 / out->median_ms) : 20;
        n = n < 3 ? 3 : n > 30 ? 30 : n;
        double ms[30];
        st = tsl_program_run(p, a, target); /* warm */
        for (int i = 0; !st && i < n; i++) {
            double t0 = now_ms();
            st = tsl_program_run(p, a, target);
            ms[i] = now_ms() - t0;
        }
        if (!st) {
            qsort(ms, (size_t)n, sizeof *ms, cmp_double);
            out->call_ms = ms[n / 2];
        }
    }
    return st;
}
