/* test_tune.c — measuring and tuning (src/tune/, api/bench.c): a bench
 * checks the output before timing and reports the op graph's work; runs
 * take the options a tuning record holds, and say so. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "tessel.h"
#include "test.h"

static const char mm_src[] = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n";

static DLTensor *random_tensor(int64_t r, int64_t c)
{
    int64_t s[2] = {r, c};
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_F32, 2, s);
    for (int64_t i = 0; i < r * c; i++) ((float *)t->data)[i] = (float)test_rand_double(-1, 1);
    return t;
}

/* A private cache for the test (the run's own cache stays untouched). */
static char *fresh_cache(void)
{
    char tmpl[] = "/tmp/tessel-test-tune-XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir) return NULL;
    setenv("TESSEL_CACHE_DIR", dir, 1);
    rt_cache_reset();
    return strdup(dir);
}

static void drop_cache(char *dir, const char *old)
{
    rt_cache_reset();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "rm failed\n");
    if (old) setenv("TESSEL_CACHE_DIR", old, 1);
    else unsetenv("TESSEL_CACHE_DIR");
    free(dir);
}

/* tsl_program_bench on the CPU: right answer checked, the work of a
 * matmul (2MNK operations, the three tensors' bytes), sane timings. */
static void test_bench_cpu(void)
{
    const char *old = getenv("TESSEL_CACHE_DIR");
    char *keep = old ? strdup(old) : NULL;
    char *dir = fresh_cache();
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK(tsl_program_compile(ctx, mm_src, "mm.tc", NULL, &p) == TSL_OK);
    int64_t M = test_rand_int(1, 97), K = test_rand_int(1, 131), N = test_rand_int(1, 149);
    DLTensor *A = random_tensor(M, K), *B = random_tensor(K, N);
    tsl_args *a = tsl_args_create(p);
    CHECK(tsl_args_set_tensor(a, "A", A) == TSL_OK && tsl_args_set_tensor(a, "B", B) == TSL_OK);
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
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_program_free(p);
    tsl_context_free(ctx);
    drop_cache(dir, keep);
    free(keep);
}

/* Options set by the caller are the ones used and are not "tuned". */
static void test_run_says_options_used(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    CHECK(tsl_program_compile(ctx, mm_src, "mm.tc", NULL, &p) == TSL_OK);
    DLTensor *A = random_tensor(5, 7), *B = random_tensor(7, 3);
    tsl_args *a = tsl_args_create(p);
    CHECK(tsl_args_set_tensor(a, "A", A) == TSL_OK && tsl_args_set_tensor(a, "B", B) == TSL_OK);
    CHECK(tsl_program_set_options(p, "cpu.threads=1") == TSL_OK);
    CHECK(tsl_program_run(p, a, TSL_TARGET_CPU) == TSL_OK);
    int tuned = -1;
    CHECK_EQ_STR(tsl_args_options_used(a, &tuned), "cpu.threads=1");
    CHECK_EQ_INT(tuned, 0);
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

TEST_SUITE(tune) = {
    {"bench_cpu", test_bench_cpu},
    {"run_says_options_used", test_run_says_options_used},
    {0, 0},
};
