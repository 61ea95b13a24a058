/* test_tune.c — measuring and tuning (src/tune/, api/bench.c): a bench
 * checks the output before timing and reports the op graph's work; runs
 * take the options a tuning record holds, and say so. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "tessel.h"
#include "test.h"
#include "api/api.h"
#include "base/base.h"
#include "tune/tune.h"

static const char mm_src[] = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n";

static DLTensor *random_tensor(int64_t r, int64_t c)
{
    int64_t s[2] = {r, c};
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_F32, 2, s);
    for (int64_t i = 0; i < r * c; i++) ((float *)t->data)[i] = (float)test_rand_double(-1, 1);
    return t;
}

/* The set-up every test here shares: a private cache (the run's own stays
 * untouched; `fresh` 0 keeps the run's), a context, the matmul compiled,
 * random A (M x K) and B (K x N) bound into args. */
typedef struct mm_fixture {
    char *dir, *keep; /* the private cache and the setting it replaced */
    tsl_context *ctx;
    tsl_program *p;
    tsl_args *a;
    DLTensor *A, *B;
    int64_t M, K, N;
} mm_fixture;

static void mm_setup(mm_fixture *f, int fresh, int64_t M, int64_t K, int64_t N)
{
    memset(f, 0, sizeof *f);
    if (fresh) {
        const char *old = rt_settings_get()->cache_dir;
        f->keep = old ? strdup(old) : NULL;
        char tmpl[] = "/tmp/tessel-test-tune-XXXXXX";
        if (mkdtemp(tmpl)) {
            f->dir = strdup(tmpl);
            TEST_SETTING(cache_dir, f->dir);
            rt_cache_reset();
        }
        CHECK(f->dir != NULL);
    }
    f->ctx = tsl_context_create();
    CHECK(tsl_program_compile(f->ctx, mm_src, "mm.tc", NULL, &f->p) == TSL_OK);
    f->M = M, f->K = K, f->N = N;
    f->A = random_tensor(M, K);
    f->B = random_tensor(K, N);
    f->a = tsl_args_create(f->p);
    CHECK(tsl_args_set_tensor(f->a, "A", f->A) == TSL_OK && tsl_args_set_tensor(f->a, "B", f->B) == TSL_OK);
}

static void mm_teardown(mm_fixture *f)
{
    tsl_args_free(f->a);
    tsl_tensor_free(f->A);
    tsl_tensor_free(f->B);
    tsl_program_free(f->p);
    tsl_context_free(f->ctx);
    if (f->dir) {
        rt_cache_reset();
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
        if (system(cmd) != 0) fprintf(stderr, "rm failed\n");
        TEST_SETTING(cache_dir, f->keep);
        free(f->dir);
    }
    free(f->keep);
}

/* tsl_program_bench on the CPU: right answer checked, the work of a
 * matmul (2MNK operations, the three tensors' bytes), sane timings. */
static void test_bench_cpu(void)
{
    mm_fixture f;
    mm_setup(&f, 1, test_rand_int(1, 97), test_rand_int(1, 131), test_rand_int(1, 149));
    tsl_context *ctx = f.ctx;
    tsl_program *p = f.p;
    tsl_args *a = f.a;
    int64_t M = f.M, K = f.K, N = f.N;
    tsl_bench_config cfg = {.budget_s = 0.05, .min_reps = 3, .max_reps = 50};
    tsl_bench_result r;
    tsl_status st = tsl_program_bench(p, a, TSL_TARGET_CPU, &cfg, &r);
    CHECK_MSG(st == TSL_OK, "%lldx%lldx%lld: %s", (long long)M, (long long)K, (long long)N, tsl_context_error(ctx));
    if (st == TSL_OK) {
        CHECK_CLOSE(r.flops, 2.0 * (double)(M * N * K), 1e-12);
        CHECK_CLOSE(r.bytes, 4.0 * (double)(M * K + K * N + M * N), 1e-12);
        CHECK(r.reps >= 3 && r.reps <= 50 && r.sets >= 1);
        CHECK(r.min_ms > 0 && r.min_ms <= r.median_ms && r.p10_ms <= r.median_ms && r.median_ms <= r.p90_ms);
        CHECK(r.check_error <= 1 && !r.check_reduced);
        CHECK(r.cold_compile_ms > 0 && r.cached_prepare_ms > 0 && r.call_ms > 0);
        CHECK_EQ_STR(r.options, "");
        CHECK(!r.tuned);
    }
    /* not a compiled target: a clear error */
    CHECK_EQ_INT(tsl_program_bench(p, a, TSL_TARGET_INTERP, &cfg, &r), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "not a compiled target"), "%s", tsl_context_error(ctx));
    mm_teardown(&f);
}

/* Options set by the caller are the ones used and are not "tuned". */
static void test_run_says_options_used(void)
{
    mm_fixture f;
    mm_setup(&f, 0, 5, 7, 3);
    CHECK(tsl_program_set_options(f.p, "cpu.threads=1") == TSL_OK);
    CHECK(tsl_program_run(f.p, f.a, TSL_TARGET_CPU) == TSL_OK);
    int tuned = -1;
    CHECK_EQ_STR(tsl_args_options_used(f.a, &tuned), "cpu.threads=1");
    CHECK_EQ_INT(tuned, 0);
    mm_teardown(&f);
}

/* C matches the interpreter on a's inputs (a ran on the CPU). */
static void check_against_interp(tsl_program *p, tsl_args *a, const DLTensor *A, const DLTensor *B, const char *what)
{
    tsl_args *ref = tsl_args_create(p);
    CHECK(tsl_args_set_tensor(ref, "A", (DLTensor *)A) == TSL_OK && tsl_args_set_tensor(ref, "B", (DLTensor *)B) == TSL_OK);
    CHECK(tsl_program_run(p, ref, TSL_TARGET_INTERP) == TSL_OK);
    const DLTensor *R = tsl_args_output(ref, "C"), *C = tsl_args_output(a, "C");
    int64_t n = R->shape[0] * R->shape[1];
    int bad = 0;
    for (int64_t i = 0; C && i < n && bad < 3; i++) {
        double x = ((const float *)C->data)[i], y = ((const float *)R->data)[i];
        if (!(fabs(x - y) <= 1e-4 * (1 + fabs(y)))) {
            bad++;
            CHECK_MSG(0, "%s: C[%lld] = %g, reference %g", what, (long long)i, x, y);
        }
    }
    tsl_args_free(ref);
}

static void progress_line(void *ctx, const char *line)
{
    (void)ctx;
    printf("    %s\n", line);
}

/* tsl_program_tune on the CPU: a short genetic search records its best;
 * a later run of the program (options never set) uses it and says so,
 * and computes the right answer. */
static void test_tune_then_run(void)
{
    mm_fixture f;
    mm_setup(&f, 1, test_rand_int(33, 97), test_rand_int(1, 131), test_rand_int(17, 149));
    tsl_context *ctx = f.ctx;
    tsl_program *p = f.p;
    tsl_args *a = f.a;
    DLTensor *A = f.A, *B = f.B;
    int64_t M = f.M, K = f.K, N = f.N;
    tsl_tune_config cfg = {.budget_s = 60, .generations = 2, .population = 5, .compilers = 2, .candidate_ms = 10,
                           .seed = test_rand() | 1, .progress = progress_line};
    tsl_tune_result r;
    tsl_status st = tsl_program_tune(p, a, TSL_TARGET_CPU, &cfg, &r);
    CHECK_MSG(st == TSL_OK, "tune: %s", tsl_context_error(ctx));
    CHECK(r.generations == 2 && r.workers == 1 && r.tried >= 6 && r.tried <= 10);
    CHECK(r.default_ms > 0 && r.best_ms > 0 && r.best_ms <= r.default_ms);
    CHECK(r.recorded && r.timed_by[0] == r.tried - r.failed && r.best_device == -1);
    printf("    %lldx%lldx%lld: default %.4f ms, best %.4f ms (%s), %d tried, %d failed, %d rejected\n", (long long)M,
           (long long)K, (long long)N, r.default_ms, r.best_ms, r.best_options, r.tried, r.failed, r.rejected);
    /* a run with the options never set takes the record */
    tsl_args *b = tsl_args_create(p);
    CHECK(tsl_args_set_tensor(b, "A", A) == TSL_OK && tsl_args_set_tensor(b, "B", B) == TSL_OK);
    CHECK(tsl_program_run(p, b, TSL_TARGET_CPU) == TSL_OK);
    int tuned = -1;
    CHECK_EQ_STR(tsl_args_options_used(b, &tuned), r.best_options);
    CHECK_EQ_INT(tuned, r.best_options[0] != 0);
    check_against_interp(p, b, A, B, "the tuned run");
    /* the record against the defaults, interleaved: "tuned" reads it */
    tsl_bench_compare_config cc = {.budget_s = 0.05, .rounds = 4};
    tsl_bench_compare_result cr;
    st = tsl_program_bench_compare(p, b, TSL_TARGET_CPU, "default", "tuned", &cc, &cr);
    CHECK_MSG(st == TSL_OK, "compare: %s", tsl_context_error(ctx));
    if (st == TSL_OK) {
        CHECK(cr.b.tuned && !cr.a.tuned && cr.a.check_error <= 1 && cr.b.check_error <= 1);
        CHECK_EQ_STR(cr.b.options, r.best_options);
        CHECK_EQ_STR(cr.a.options, "");
        printf("    default against tuned, 4 rounds: %.3fx (rounds %.3f..%.3f)\n", cr.ratio, cr.round_min,
               cr.round_max);
    }
    /* options pinned to the defaults: no lookup */
    CHECK(tsl_program_set_options(p, "") == TSL_OK);
    CHECK(tsl_program_run(p, b, TSL_TARGET_CPU) == TSL_OK);
    CHECK_EQ_STR(tsl_args_options_used(b, &tuned), "");
    CHECK_EQ_INT(tuned, 0);
    tsl_args_free(b);
    mm_teardown(&f);
}

/* Issue 16 on the CPU: two workers split the candidates; every candidate
 * is timed once, by one worker; worker 1 faults (SIGSEGV) on every second
 * candidate it is handed and worker 0 overruns the timeout once (5 s); each
 * ends only that candidate, recorded as failed with the reason, and the
 * search goes on on both. */
static void fault_hook(void *ctx, int worker, const char *options)
{
    (void)ctx;
    (void)options;
    static int handed; /* per worker process: a restarted worker counts afresh */
    handed++;
    if (worker == 1 && handed == 2) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    if (worker == 0 && handed == 3 && !access((const char *)ctx, F_OK)) {
        unlink((const char *)ctx); /* once per session */
        sleep(30);
    }
}

static void test_two_workers_split_and_survive_a_fault(void)
{
    mm_fixture f;
    mm_setup(&f, 1, test_rand_int(1, 61), test_rand_int(1, 67), test_rand_int(1, 71));
    tsl_program *p = f.p;
    tsl_args *a = f.a;
    const char *dir = f.dir ? f.dir : "/nonexistent";
    CHECK(tsl_args_infer(a) == TSL_OK);
    /* the session at the internal level, where a test may plant a fault */
    char marker[64];
    snprintf(marker, sizeof marker, "%s/sleep-once", dir);
    FILE *mf = fopen(marker, "w");
    if (mf) fclose(mf);
    tune_config cfg = {.target = TSL_TARGET_CPU, .budget_s = 120, .generations = 2, .population = 10,
                       .workers = 2, .compilers = 2, .candidate_ms = 5, .timeout_s = 5, .seed = test_rand() | 1,
                       .progress = progress_line, .before_run = fault_hook, .hook_ctx = marker};
    interp_tensor *views = NULL, *cv = NULL;
    char **owned = NULL;
    CHECK(api_args_views(p, a, &views) == TSL_OK && api_args_carry(p, views, &cv, &owned) == TSL_OK);
    tsl_diag d = {0};
    tune_report rep;
    tsl_status st = cv ? tune_run(&cfg, p->def, api_args_bound(a), cv, &rep, &d) : TSL_ERR_ARG;
    CHECK_MSG(st == TSL_OK, "tune_run: %s", sb_str(&d.msg));
    int faults = 0, timeouts = 0, ok = 0, after_fault0 = 0, after_fault1 = 0, seen_fault = 0;
    for (int i = 0; st == TSL_OK && i < rep.nhist; i++) {
        const tune_entry *e = &rep.hist[i];
        if (getenv("TSL_TUNE_DEBUG")) printf("      %d w%d %.4f '%s' %s\n", e->status, e->worker, e->ms, e->options, e->msg);
        for (int j = 0; j < i; j++) CHECK_MSG(strcmp(e->options, rep.hist[j].options), "'%s' twice", e->options);
        CHECK_MSG(e->timed == (e->status == TSL_OK), "'%s' timed %d times (status %d)", e->options, e->timed,
                  e->status);
        if (e->status == TSL_OK) {
            ok++;
            CHECK(e->worker == 0 || e->worker == 1);
            CHECK(e->ms > 0 && e->err <= 1);
            if (seen_fault) e->worker ? after_fault1++ : after_fault0++;
        } else if (strstr(e->msg, "worker 1") && (strstr(e->msg, "died: signal") || strstr(e->msg, "ended: exit"))) {
            faults++;
            seen_fault = 1;
        } else if (strstr(e->msg, "timed out")) {
            timeouts++; /* the planted one (worker 0), or a neighbour-starved candidate */
            CHECK(e->worker == 0 || e->worker == 1);
        }
    }
    CHECK_EQ_INT(rep.timed_by[0] + rep.timed_by[1], ok);
    CHECK(rep.timed_by[0] >= 2 && rep.timed_by[1] >= 1);
    CHECK_MSG(faults >= 1 && timeouts >= 1, "%d faults, %d timeouts", faults, timeouts);
    CHECK_MSG(after_fault0 + after_fault1 >= 2, "the search went on after the fault: %d, %d", after_fault0,
              after_fault1);
    CHECK(rep.best >= 0 && rep.recorded);
    printf("    %d candidates: %d timed (worker 0: %d, worker 1: %d), %d faults, %d timeouts, %.1f s\n", rep.nhist, ok,
           rep.timed_by[0], rep.timed_by[1], faults, timeouts, rep.wall_s);
    if (st == TSL_OK) tune_report_free(&rep);
    diag_free(&d);
    api_args_uncarry(p, views, cv, owned, 0);
    free(views);
    mm_teardown(&f);
}

/* ---- two option sets against each other (tune/compare.c, tsl_program_bench_compare) ---- */

/* A timer that runs nothing: side A's runs take 2x, B's 1x a time that
 * drifts up 50% every round (a machine slowing down), a little jitter
 * around it; logs the order the sides were timed in. */
typedef struct fake_timer {
    char order[64];
    int calls, fail_at, empty_at;
    double ratio; /* A's time over B's */
} fake_timer;

static tsl_status fake_time(void *ctx, int side, double *ms, int cap, int *n, tsl_diag *d)
{
    fake_timer *f = ctx;
    int round = f->calls / 2;
    f->order[f->calls++] = "AB"[side];
    if (f->calls == f->fail_at) {
        diag_error(d, TSL_ERR_RUNTIME, "planted failure");
        return TSL_ERR_RUNTIME;
    }
    *n = f->calls == f->empty_at ? 0 : 5 < cap ? 5 : cap;
    double base = (side ? 1.0 : f->ratio) * (1 + 0.5 * round);
    static const double jitter[5] = {1.0, 0.98, 1.02, 0.99, 1.01};
    for (int i = 0; i < *n; i++) ms[i] = base * jitter[i];
    return TSL_OK;
}

/* The order statistics that hold the median: by hand from the binomial. */
static void test_median_interval(void)
{
    struct { int n, lo, hi; double cov; } want[] = {
        {1, 0, 0, 0.0},
        {3, 0, 2, 1 - 2.0 / 8},
        {5, 0, 4, 1 - 2.0 / 32},
        {6, 0, 5, 1 - 2.0 / 64},
        {10, 1, 8, 1 - 2.0 * 11 / 1024},                                   /* P(X <= 1) = 11/1024 */
        {20, 5, 14, 1 - 2.0 * (1 + 20 + 190 + 1140 + 4845 + 15504) / 1048576}, /* P(X <= 5) */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int lo = -1, hi = -1;
        double cov = -1;
        tune_median_interval(want[i].n, &lo, &hi, &cov);
        CHECK_MSG(lo == want[i].lo && hi == want[i].hi, "n=%d: [%d, %d], want [%d, %d]", want[i].n, lo, hi,
                  want[i].lo, want[i].hi);
        CHECK_CLOSE(cov, want[i].cov, 1e-9);
    }
}

/* Rounds alternate A B, B A, ...; each round's ratio pairs A and B in
 * time, so a drift of 50% a round cancels (every round reads 2.00x);
 * the pooled medians, the verdict, too few rounds, a failing timer. */
static void test_ab_alternation_and_ratio(void)
{
    tsl_diag d = {0};
    fake_timer f = {.ratio = 2.0};
    tune_ab ab;
    CHECK(tune_ab_run(6, 100, fake_time, &f, &ab, &d) == TSL_OK);
    CHECK_EQ_STR(f.order, "ABBAABBAABBA");
    for (int r = 0; r < 6; r++) CHECK_EQ_INT(tune_ab_first(r), r % 2);
    CHECK_EQ_INT(ab.rounds, 6);
    CHECK_EQ_INT(ab.side[0].reps, 30);
    CHECK_EQ_INT(ab.side[1].reps, 30);
    CHECK_CLOSE(ab.round_min, 2.0, 1e-12);
    CHECK_CLOSE(ab.round_max, 2.0, 1e-12);
    CHECK_CLOSE(ab.round_median, 2.0, 1e-12);
    CHECK_CLOSE(ab.lo, 2.0, 1e-12);
    CHECK_CLOSE(ab.hi, 2.0, 1e-12);
    CHECK_CLOSE(ab.coverage, 1 - 2.0 / 64, 1e-12);
    CHECK_CLOSE(ab.ratio, ab.side[0].median_ms / ab.side[1].median_ms, 1e-12);
    CHECK_CLOSE(ab.side[1].min_ms, 0.98, 1e-12); /* round 0's fastest */
    CHECK_EQ_INT(tune_ab_verdict(&ab), 1);
    /* B slower: A is faster */
    f = (fake_timer){.ratio = 0.8};
    CHECK(tune_ab_run(10, 100, fake_time, &f, &ab, &d) == TSL_OK);
    CHECK_CLOSE(ab.round_median, 0.8, 1e-12);
    CHECK_EQ_INT(tune_ab_verdict(&ab), -1);
    /* the same 2x over 3 rounds: 75% is too little to call it */
    f = (fake_timer){.ratio = 2.0};
    CHECK(tune_ab_run(3, 100, fake_time, &f, &ab, &d) == TSL_OK);
    CHECK_EQ_STR(f.order, "ABBAAB");
    CHECK_CLOSE(ab.coverage, 0.75, 1e-12);
    CHECK_EQ_INT(tune_ab_verdict(&ab), 0);
    /* rounds' ratios on both sides of 1: no verdict */
    tune_ab mixed = {.rounds = 10, .lo = 0.95, .hi = 1.04, .coverage = 0.979};
    CHECK_EQ_INT(tune_ab_verdict(&mixed), 0);
    /* the cap holds; a failing or empty side ends the comparison with its reason */
    f = (fake_timer){.ratio = 1.0};
    CHECK(tune_ab_run(2, 3, fake_time, &f, &ab, &d) == TSL_OK);
    CHECK_EQ_INT(ab.side[0].reps, 6);
    f = (fake_timer){.ratio = 1.0, .fail_at = 3};
    CHECK_EQ_INT(tune_ab_run(4, 10, fake_time, &f, &ab, &d), TSL_ERR_RUNTIME);
    CHECK_EQ_INT(f.calls, 3);
    CHECK(strstr(sb_str(&d.msg), "planted failure") != NULL);
    diag_reset(&d);
    f = (fake_timer){.ratio = 1.0, .empty_at = 4};
    CHECK_EQ_INT(tune_ab_run(4, 10, fake_time, &f, &ab, &d), TSL_ERR_RUNTIME);
    CHECK_MSG(strstr(sb_str(&d.msg), "round 2 of A timed no run") != NULL, "%s", sb_str(&d.msg));
    diag_free(&d);
}

/* tsl_program_bench_compare on the CPU with two real plans (different
 * contract.cpu tiles): both checked against the interpreter, the rounds
 * and runs as asked, the ratio of the medians and its interval
 * consistent; "tuned" with no record, and a plan the target cannot
 * build, are errors naming the side. */
static void test_bench_compare_cpu(void)
{
    mm_fixture f;
    mm_setup(&f, 1, test_rand_int(1, 97), test_rand_int(1, 131), test_rand_int(1, 149));
    const char *tiles = "contract.cpu.bm=48,contract.cpu.bn=64,contract.cpu.tm=4,contract.cpu.tn=8";
    tsl_bench_compare_config cfg = {.budget_s = 0.06, .rounds = 6};
    tsl_bench_compare_result r;
    tsl_status st = tsl_program_bench_compare(f.p, f.a, TSL_TARGET_CPU, "default", tiles, &cfg, &r);
    CHECK_MSG(st == TSL_OK, "%lldx%lldx%lld: %s", (long long)f.M, (long long)f.K, (long long)f.N,
              tsl_context_error(f.ctx));
    if (st == TSL_OK) {
        CHECK_EQ_STR(r.a.options, "");
        CHECK_EQ_STR(r.b.options, tiles);
        CHECK(!r.a.tuned && !r.b.tuned);
        CHECK(r.a.check_error <= 1 && r.b.check_error <= 1 && !r.check_reduced);
        CHECK_EQ_INT(r.rounds, 6);
        CHECK(r.sets >= 1);
        CHECK(r.a.reps >= 6 * TUNE_AB_MIN_REPS && r.b.reps >= 6 * TUNE_AB_MIN_REPS);
        CHECK(r.a.min_ms > 0 && r.a.min_ms <= r.a.median_ms && r.a.median_ms <= r.a.p90_ms);
        CHECK(r.b.min_ms > 0 && r.b.min_ms <= r.b.median_ms && r.b.median_ms <= r.b.p90_ms);
        CHECK_CLOSE(r.ratio, r.a.median_ms / r.b.median_ms, 1e-12);
        CHECK(r.round_min <= r.lo && r.lo <= r.round_median && r.round_median <= r.hi && r.hi <= r.round_max);
        CHECK_CLOSE(r.coverage, 1 - 2.0 / 64, 1e-12);
        CHECK(r.verdict == (r.lo > 1) - (r.hi < 1));
        printf("    %lldx%lldx%lld: defaults %.4f ms, tiles %.4f ms: %.3fx (rounds %.3f..%.3f)\n", (long long)f.M,
               (long long)f.K, (long long)f.N, r.a.median_ms, r.b.median_ms, r.ratio, r.round_min, r.round_max);
    }
    CHECK_EQ_INT(tsl_program_bench_compare(f.p, f.a, TSL_TARGET_CPU, "default", "tuned", &cfg, &r), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(f.ctx), "B: no tuning record of mm"), "%s", tsl_context_error(f.ctx));
    CHECK_EQ_INT(tsl_program_bench_compare(f.p, f.a, TSL_TARGET_CPU, "contract.cpu.bm=64", NULL, &cfg, &r),
                 TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(f.ctx), "A: contract.cpu: the block 64x128 is not a whole number"), "%s",
              tsl_context_error(f.ctx));
    CHECK_EQ_INT(tsl_program_bench_compare(f.p, f.a, TSL_TARGET_INTERP, NULL, NULL, &cfg, &r), TSL_ERR_ARG);
    mm_teardown(&f);
}

/* A bench too big for the interpreter checks at sizes cut to TUNE_CUT
 * (tune_check_reduced): its fresh inputs are what the kernels take, so a
 * low-bit parameter is packed. With the codes as their carrier (a byte
 * each) the kernels read them as packed fields and every quantized
 * program failed the check ("wrong result" by about 1.2) on both targets.
 * The quantized GEMV at M 2..5 (M 1 happened to pass), 4096 x 8192 uint4. */
static void test_bench_lowbit_reduced(void)
{
    static const char src[] = "def qmm(float16(M,K) X, uint4(K,N) W, float16(G,N) S) -> (Y) {\n"
                              "  Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k)\n}\n";
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK(tsl_program_compile(ctx, src, "qmm.tc", NULL, &p) == TSL_OK);
    int64_t M = test_rand_int(2, 5), K = 4096, N = 8192, G = K / 128; /* over TUNE_INTERP_OPS */
    int64_t sx[2] = {M, K}, sw[2] = {K, N}, ss[2] = {G, N};
    DLTensor *X = tsl_tensor_alloc(TSL_DTYPE_F16, 2, sx), *W = tsl_tensor_alloc(TSL_DTYPE_U4, 2, sw);
    DLTensor *S = tsl_tensor_alloc(TSL_DTYPE_F16, 2, ss);
    for (int64_t i = 0; i < M * K; i++) ((uint16_t *)X->data)[i] = f32_to_f16((float)test_rand_double(-1, 1));
    for (int64_t i = 0; i < G * N; i++) ((uint16_t *)S->data)[i] = f32_to_f16((float)test_rand_double(0.01, 0.1));
    for (int64_t i = 0; i < K * N / 2; i++) ((uint8_t *)W->data)[i] = (uint8_t)test_rand();
    tsl_args *a = tsl_args_create(p);
    CHECK(tsl_args_set_tensor(a, "X", X) == TSL_OK && tsl_args_set_tensor(a, "W", W) == TSL_OK &&
          tsl_args_set_tensor(a, "S", S) == TSL_OK);
    tsl_bench_config cfg = {.budget_s = 0.02, .min_reps = 1, .max_reps = 3};
    tsl_bench_result r;
    tsl_status st = tsl_program_bench(p, a, TSL_TARGET_CPU, &cfg, &r);
    CHECK_MSG(st == TSL_OK, "M %lld: %s", (long long)M, tsl_context_error(ctx));
    if (st == TSL_OK) CHECK_MSG(r.check_reduced && r.check_error <= 1, "reduced %d, error %g", r.check_reduced,
                                r.check_error);
    tsl_args_free(a);
    tsl_tensor_free(X);
    tsl_tensor_free(W);
    tsl_tensor_free(S);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* The search's space cut to what changes a program's plan (or its run):
 * the quantized GEMV on CUDA keeps qmatmul.mma and contract.splitk and
 * loses the LSTM, chain and attention parameters; a matmul on the CPU
 * keeps its tiles and the threads (read when it runs) and loses the LSTM
 * cell's rows; a program no option touches keeps only what the run reads. */
static int space_has(const tune_space *s, const char *key)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->param[i]->key, key)) return 1;
    return 0;
}

static void test_space_cut(void)
{
    static const struct {
        const char *src;
        tsl_target t;
        const char *keep[3], *lose[3];
    } cs[] = {
        {"def qmm(float16(M,K) X, uint8(K,N) W, float16(G,N) S) -> (Y) {\n"
         "  Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k)\n}\n",
         TSL_TARGET_CUDA,
         {"qmatmul.mma", "contract.splitk", "qmatmul.dequant"},
         {"lstm.mma.bm", "chain.mma.bm", "contract.mma.bm"}},
        {mm_src, TSL_TARGET_CPU, {"contract.cpu.bm", "contract.cpu.tn", "cpu.threads"}, {"lstm.cpu.bm", NULL, NULL}},
        {"def cp(float(N) A) -> (B) {\n  B(i) = A(i)\n}\n", TSL_TARGET_CPU, {"cpu.threads", NULL, NULL},
         {"contract.cpu.bm", "lstm.cpu.bm", NULL}},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        tsl_context *ctx = tsl_context_create();
        tsl_program *p = NULL;
        CHECK(tsl_program_compile(ctx, cs[i].src, "cut.tc", NULL, &p) == TSL_OK);
        if (p) {
            tune_space s;
            tune_space_init(&s, cs[i].t);
            int all = s.n, cut = tune_space_cut(&s, p->def);
            CHECK_MSG(cut > 0 && s.n == all - cut, "case %zu: %d of %d cut, %d left", i, cut, all, s.n);
            for (int k = 0; k < 3; k++) {
                if (cs[i].keep[k]) CHECK_MSG(space_has(&s, cs[i].keep[k]), "case %zu: %s cut", i, cs[i].keep[k]);
                if (cs[i].lose[k]) CHECK_MSG(!space_has(&s, cs[i].lose[k]), "case %zu: %s kept", i, cs[i].lose[k]);
            }
            printf("    case %zu: %d of %d parameters kept\n", i, s.n, all);
        }
        tsl_program_free(p);
        tsl_context_free(ctx);
    }
}

TEST_SUITE(tune) = {
    {"bench_cpu", test_bench_cpu},
    {"run_says_options_used", test_run_says_options_used},
    {"tune_then_run", test_tune_then_run},
    {"two_workers_split_and_survive_a_fault", test_two_workers_split_and_survive_a_fault},
    {"median_interval", test_median_interval},
    {"ab_alternation_and_ratio", test_ab_alternation_and_ratio},
    {"bench_compare_cpu", test_bench_compare_cpu},
    {"bench_lowbit_reduced", test_bench_lowbit_reduced},
    {"space_cut", test_space_cut},
    {0, 0},
};
