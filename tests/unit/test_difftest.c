/* test_difftest.c — the differential tester in the unit run: every saved
 * failure (the .tc files in tests/fuzz/regress/) and a bounded number of fresh random
 * programs run on the interpreter and, once it exists, the CPU target, and
 * must agree; plus checks that the comparison itself can fail (poison,
 * tolerance, integer sentinels) and that the generator is deterministic.
 * The longer run is scripts/difftest.sh N. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz/gen.c" /* the generator and runner, built into the unit tests too */
#include "test.h"

/* Fresh programs per run, and a wall-clock budget (the CPU target runs the
 * system C compiler once per program); the count is what usually binds. */
enum { DIFF_PROGRAMS = 50 };
#ifdef __SANITIZE_ADDRESS__
static const double diff_budget_s = 8;
#else
static const double diff_budget_s = 4;
#endif

static double diff_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_random_programs(void)
{
    dt_opts o = {.max_elems = 600, .max_stmts = 4, .gemm_percent = 20};
    double t0 = diff_now();
    int ran = 0, interp_only = 0;
    for (int k = 0; k < DIFF_PROGRAMS; k++) {
        uint64_t seed = test_rand();
        char *text = dt_gen_program(seed, &o);
        char msg[4096];
        dt_verdict v = dt_run(text, "random.tc", test_rand(), TSL_TARGET_CPU, msg, sizeof msg);
        CHECK_MSG(v != DT_FAIL, "program seed 0x%llx: %s\n%s", (unsigned long long)seed, msg, text);
        interp_only += v == DT_PASS_INTERP;
        ran++;
        free(text);
        if (diff_now() - t0 > diff_budget_s) break;
    }
    if (interp_only) printf("    cpu target not available: interpreter only\n");
    printf("    %d random programs (%d compared with cpu)\n", ran, ran - interp_only);
}

static void test_regressions(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/regress", test_root());
    DIR *d = opendir(dir);
    if (!d) return; /* no failure found yet */
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".tc") != 0) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t size;
        char *text = file_read_all(path, &size);
        CHECK_MSG(text != NULL, "cannot read %s", path);
        if (!text) continue;
        char msg[4096];
        dt_verdict v = dt_run(text, e->d_name, test_rand(), TSL_TARGET_CPU, msg, sizeof msg);
        CHECK_MSG(v != DT_FAIL, "%s: %s", path, msg);
        free(text);
        n++;
    }
    closedir(d);
    printf("    %d regression programs\n", n);
}

static void test_generator_deterministic(void)
{
    dt_opts o = {.max_elems = 600, .max_stmts = 4, .gemm_percent = 20};
    uint64_t seed = test_rand();
    char *a = dt_gen_program(seed, &o), *b = dt_gen_program(seed, &o);
    CHECK_EQ_STR(a, b);
    tsl_context *ctx = tsl_context_create();
    CHECK_MSG(tsl_check(ctx, a, "gen.tc") == TSL_OK, "%s\n%s", tsl_context_error(ctx), a);
    tsl_context_free(ctx);
    free(a);
    free(b);
}

/* A tensor of n elements of dtype dt holding the values v (f32 / i32). */
static DLTensor *diff_tensor(tsl_dtype dt, int64_t n, const double *v)
{
    DLTensor *t = tsl_tensor_alloc(dt, 1, &n);
    for (int64_t k = 0; k < n; k++) dtype_store(dt, (char *)t->data + (size_t)k * tsl_dtype_size(dt), v[k]);
    return t;
}

static void test_compare_can_fail(void)
{
    char msg[512];
    double r[5], x[5];
    for (int k = 0; k < 5; k++) r[k] = x[k] = test_rand_double(0.5, 2) * (k % 2 ? -1 : 1);
    DLTensor *a = diff_tensor(TSL_DTYPE_F32, 5, r);
    DLTensor *b = diff_tensor(TSL_DTYPE_F32, 5, x);
    CHECK_EQ_INT(run_compare("O", a, b, TSL_TARGET_CPU, 1e-5, 0, msg, sizeof msg), 0);
    /* a relative error of 1e-3 of max|ref| in one element is a mismatch for float32 */
    int k = (int)test_rand_int(0, 4);
    float *bf = b->data;
    bf[k] += 2e-3f;
    CHECK_EQ_INT(run_compare("O", a, b, TSL_TARGET_CPU, 1e-5, 0, msg, sizeof msg), 1);
    CHECK_MSG(strstr(msg, "element") != NULL, "%s", msg);
    bf[k] = NAN; /* an element left poisoned */
    CHECK_EQ_INT(run_compare("O", a, b, TSL_TARGET_CPU, 1e-5, 0, msg, sizeof msg), 1);
    ((float *)a->data)[k] = NAN; /* the interpreter's own output unwritten */
    CHECK_EQ_INT(run_compare("O", a, NULL, TSL_TARGET_CPU, 1e-5, 0, msg, sizeof msg), 1);
    CHECK(strstr(msg, "unwritten") != NULL);
    tsl_tensor_free(a);
    tsl_tensor_free(b);
    /* integers are exact; the poison sentinel counts as unwritten */
    for (int j = 0; j < 5; j++) r[j] = x[j] = (double)test_rand_int(1, 100);
    a = diff_tensor(TSL_DTYPE_I32, 5, r);
    b = diff_tensor(TSL_DTYPE_I32, 5, x);
    CHECK_EQ_INT(run_compare("I", a, b, TSL_TARGET_CPU, 1e-5, 0, msg, sizeof msg), 0);
    ((int32_t *)b->data)[k] += 1;
    CHECK_EQ_INT(run_compare("I", a, b, TSL_TARGET_CPU, 1e-5, 0, msg, sizeof msg), 1);
    ((int32_t *)a->data)[k] = (int32_t)run_poison(TSL_DTYPE_I32, 0);
    CHECK_EQ_INT(run_compare("I", a, NULL, TSL_TARGET_CPU, 1e-5, 0, msg, sizeof msg), 1);
    tsl_tensor_free(a);
    tsl_tensor_free(b);
}

static void test_runner_errors(void)
{
    char msg[4096];
    /* a size missing from the header, and a program the front end rejects */
    const char *nosize = "# sizes: M=3\ndef f(float(M,N) A) -> (B) { B(i,j) = A(i,j) }\n";
    CHECK_EQ_INT(dt_run(nosize, "x.tc", test_rand(), TSL_TARGET_CPU, msg, sizeof msg), DT_FAIL);
    CHECK_MSG(strstr(msg, "(N) of 'A'") != NULL, "%s", msg);
    const char *bad = "# sizes: M=3\ndef f(float(M) A) -> (B) { B(i) = A(i + 1) + C(i) }\n";
    CHECK_EQ_INT(dt_run(bad, "x.tc", test_rand(), TSL_TARGET_CPU, msg, sizeof msg), DT_FAIL);
    CHECK_MSG(strstr(msg, "x.tc:2:") != NULL, "%s", msg);
    /* an index bound that lets a gather read out of range fails on the interpreter */
    const char *oob = "# sizes: N=5 M=7\n# index: I<9\n"
                      "def f(float(N) X, int32(M) I) -> (Z) { Z(i) = X(I(i)) }\n";
    dt_verdict v = dt_run(oob, "x.tc", test_rand(), TSL_TARGET_CPU, msg, sizeof msg);
    /* seven draws from [0,9) all below 5 happen with probability (5/9)^7 ~ 1.6% */
    if (v == DT_FAIL) CHECK_MSG(strstr(msg, "interpreter fails") != NULL, "%s", msg);
    const char *ok = "# sizes: N=5 M=7\n# index: I<5\n"
                     "def f(float(N) X, int32(M) I) -> (Z) { Z(i) = X(I(i)) }\n";
    CHECK_MSG(dt_run(ok, "x.tc", test_rand(), TSL_TARGET_CPU, msg, sizeof msg) != DT_FAIL, "%s", msg);
}

TEST_SUITE(difftest) = {
    {"compare_can_fail", test_compare_can_fail},
    {"runner_errors", test_runner_errors},
    {"generator_deterministic", test_generator_deterministic},
    {"regressions", test_regressions},
    {"random_programs", test_random_programs},
    {0},
};
