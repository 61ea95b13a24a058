/* bench.c — tsl_program_bench (tessel.h): the one way tessel times a
 * program. Compile once (measured cold, with no cache lookups, and again
 * with the cache: what a new process pays), check the output against the
 * interpreter before anything is timed, then time whole plan runs with
 * tensors resident on the device and input sets rotated past the
 * last-level cache (src/tune/measure.c); last, the end-to-end cost of a
 * cached tsl_program_run of the same arguments. And
 * tsl_program_bench_compare: two option sets of a program, each compiled
 * and checked so, timed in alternating rounds on the same inputs
 * (src/tune/compare.c). */
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
    const drv_target *t = api_compiled_target(ctx, target, "tsl_program_bench");
    if (!t) return TSL_ERR_ARG;
    tsl_bench_config c = cfg ? *cfg : (tsl_bench_config){0};
    if (c.budget_s <= 0) c.budget_s = 2;
    if (c.min_reps <= 0) c.min_reps = 5;
    if (c.max_reps <= 0) c.max_reps = 10000;
    interp_tensor *views, *cv;
    char **owned;
    tsl_status st = api_args_open(p, a, &views, &cv, &owned);
    if (st) return st;
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

/* ---- two option sets against each other ---------------------------------------------------- */

/* Whether the cache holds a tuning record of p at b's shapes on t (dev's
 * arch); its options into buf ("" when the tuner kept the defaults). The
 * key a run looks up (compiled.c), but a record of the defaults is told
 * apart from none. */
static int tuned_record(tsl_program *p, const drv_target *t, void *dev, const lang_bound *b, char *buf, size_t n)
{
    char *canon = drv_program_canonical(p->def);
    strbuf shapes = {0};
    drv_shapes_text(p->def, b, &shapes);
    char key[33];
    drv_program_key("tuned", canon, t, dev, NULL, sb_str(&shapes), key);
    free(canon);
    sb_free(&shapes);
    rt_cache_entry e;
    int found = rt_cache_get("tuned", key, &e);
    if (found) snprintf(buf, n, "%s", e.note ? e.note : "");
    rt_cache_entry_free(&e);
    return found;
}

/* One side's options (tsl_program_bench_compare): "default" (or "" or
 * NULL), "tuned", or options text; the program's tf32 unless named;
 * checked for t. Errors into sd. */
static tsl_status side_options(tsl_program *p, const drv_target *t, void *dev, const lang_bound *b,
                               const char *spec, sched_options *opt, int *tuned, tsl_diag *sd)
{
    char rec[512];
    const char *text = spec && strcmp(spec, "default") ? spec : "";
    *tuned = 0;
    if (!strcmp(text, "tuned")) {
        if (!tuned_record(p, t, dev, b, rec, sizeof rec)) {
            diag_error(sd, TSL_ERR_ARG, "no tuning record of %s at these shapes on %s (`tessel tune` makes one)",
                       p->def->name, t->name);
            return TSL_ERR_ARG;
        }
        text = rec;
        *tuned = 1;
    }
    *opt = sched_options_defaults;
    opt->allow_tf32 = -1;
    tsl_status st = sched_options_parse(text, opt, sd);
    if (st) return st;
    if (opt->allow_tf32 < 0) opt->allow_tf32 = p->opt.allow_tf32;
    char why[256];
    if (sched_options_check(opt, t->id, why, sizeof why)) {
        diag_error(sd, TSL_ERR_ARG, "%s", why);
        return TSL_ERR_ARG;
    }
    return TSL_OK;
}

/* sd's message into d as "A: ..." (its "error: " prefixes dropped). */
static tsl_status side_error(tsl_diag *d, char side, tsl_status st, tsl_diag *sd)
{
    const char *m = sb_str(&sd->msg);
    if (!strncmp(m, "error: ", 7)) m += 7;
    diag_error(d, st, "%c: %s", side, *m ? m : "failed");
    diag_reset(sd);
    return st;
}

tsl_status tsl_program_bench_compare(TSL_KEEP tsl_program *p, TSL_KEEP tsl_args *a, tsl_target target,
                                     TSL_KEEP const char *options_a, TSL_KEEP const char *options_b,
                                     const tsl_bench_compare_config *cfg, tsl_bench_compare_result *out)
{
    if (!p) return TSL_ERR_ARG;
    tsl_context *ctx = p->ctx;
    if (!out) return api_error(ctx, TSL_ERR_ARG, "tsl_program_bench_compare: out is NULL");
    memset(out, 0, sizeof *out);
    const drv_target *t = api_compiled_target(ctx, target, "tsl_program_bench_compare");
    if (!t) return TSL_ERR_ARG;
    tsl_bench_compare_config c = cfg ? *cfg : (tsl_bench_compare_config){0};
    if (c.budget_s <= 0) c.budget_s = 2;
    if (c.rounds <= 0) c.rounds = 10;
    if (c.rounds > 1000)
        return api_error(ctx, TSL_ERR_ARG, "tsl_program_bench_compare: %d rounds (at most 1000)", c.rounds);
    interp_tensor *views, *cv;
    char **owned;
    tsl_status st = api_args_open(p, a, &views, &cv, &owned);
    if (st) return st;
    tsl_diag *d = api_diag(ctx), sd = {0};
    diag_reset(d);
    const lang_bound *b = api_args_bound(a);
    rt_cuda_device *cdev = NULL;
    void *dev = NULL;
    if (target == TSL_TARGET_CUDA) {
        st = rt_cuda_open(&cdev, d);
        dev = cdev;
    }
    const char *spec[2] = {options_a, options_b};
    tsl_bench_side *side[2] = {&out->a, &out->b};
    drv_prepared *pp[2] = {NULL, NULL};
    rt_exec *e[2] = {NULL, NULL};
    for (int s = 0; !st && s < 2; s++) {
        sched_options opt = sched_options_defaults;
        strbuf text = {0};
        st = side_options(p, t, dev, b, spec[s], &opt, &side[s]->tuned, &sd);
        if (!st) {
            sched_options_text(&text, &opt);
            snprintf(side[s]->options, sizeof side[s]->options, "%s", sb_str(&text));
            st = api_prepare_cached(p, t, dev, &opt, sb_str(&text), &pp[s], &sd);
        }
        sb_free(&text);
        if (st) side_error(d, "AB"[s], st, &sd);
        else e[s] = drv_prepared_exec(pp[s]);
    }
    /* both right before either is timed */
    tune_case tc = {p->def, b, cv};
    if (!st && tune_ref_affordable(&tc, TUNE_INTERP_OPS)) {
        tune_ref ref;
        st = tune_ref_make(&tc, &ref, d);
        for (int s = 0; !st && s < 2; s++)
            if ((st = tune_check(e[s], &tc, &ref, &side[s]->check_error, &sd))) side_error(d, "AB"[s], st, &sd);
        tune_ref_free(&ref);
    } else if (!st) {
        out->check_reduced = 1;
        for (int s = 0; !st && s < 2; s++)
            if ((st = tune_check_reduced(e[s], p->def, b, TUNE_CUT, TUNE_INTERP_OPS, &side[s]->check_error, &sd)))
                side_error(d, "AB"[s], st, &sd);
    }
    tune_bufs *bufs = NULL;
    if (!st) st = tune_bufs_create(e[0], &tc, (size_t)4 << 30, &bufs, d);
    tune_ab ab;
    if (!st) st = tune_ab_time(e[0], e[1], bufs, &tc, c.budget_s * 1e3, c.rounds, &ab, d);
    if (!st) {
        for (int s = 0; s < 2; s++) {
            side[s]->median_ms = ab.side[s].median_ms;
            side[s]->p10_ms = ab.side[s].p10_ms;
            side[s]->p90_ms = ab.side[s].p90_ms;
            side[s]->min_ms = ab.side[s].min_ms;
            side[s]->reps = ab.side[s].reps;
        }
        out->rounds = ab.rounds;
        out->sets = tune_bufs_sets(bufs);
        out->ratio = ab.ratio;
        out->round_median = ab.round_median;
        out->round_min = ab.round_min;
        out->round_max = ab.round_max;
        out->lo = ab.lo;
        out->hi = ab.hi;
        out->coverage = ab.coverage;
        out->verdict = tune_ab_verdict(&ab);
    }
    tune_bufs_free(bufs);
    drv_prepared_free(pp[0]);
    drv_prepared_free(pp[1]);
    rt_cuda_close(cdev);
    diag_free(&sd);
    api_args_uncarry(p, views, cv, owned, 0);
    free(views);
    return st;
}
