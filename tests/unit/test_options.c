/* test_options.c — the tuning space as data (sched/options.h): canonical
 * text round trips, the validity check says why, options change the plan,
 * and candidates the check accepts run correctly (CPU, against the
 * interpreter). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/options.h"
#include "tessel.h"
#include "test.h"

/* A random candidate: every parameter drawn from its values. */
static void random_candidate(sched_options *o)
{
    int n = 0;
    const sched_option *t = sched_option_table(&n);
    *o = sched_options_defaults;
    for (int i = 0; i < n; i++) sched_option_set(o, &t[i], t[i].values[test_rand_int(0, t[i].nvalues - 1)]);
}

static void test_defaults_and_round_trip(void)
{
    strbuf b = {0};
    sched_options_text(&b, &sched_options_defaults);
    CHECK_EQ_STR(sb_str(&b), "");
    char why[256];
    CHECK(!sched_options_check(&sched_options_defaults, TSL_TARGET_CPU, why, sizeof why));
    CHECK(!sched_options_check(&sched_options_defaults, TSL_TARGET_CUDA, why, sizeof why));
    for (int i = 0; i < 300; i++) {
        sched_options o, back = sched_options_defaults;
        random_candidate(&o);
        sb_free(&b);
        sched_options_text(&b, &o);
        tsl_diag d = {0};
        CHECK_MSG(sched_options_parse(sb_str(&b), &back, &d) == TSL_OK, "%s: %s", sb_str(&b), sb_str(&d.msg));
        CHECK_MSG(!memcmp(&o, &back, sizeof o), "round trip of '%s'", sb_str(&b));
        diag_free(&d);
    }
    sb_free(&b);
}

static void test_parse_errors(void)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"nope=1", "no such key"},
        {"contract.cpu.bm", "needs a value"},
        {"contract.cpu.bm=abc", "must be an integer"},
        {"contract.cpu.bm=7", "[16, 1024]"},
        {"contract.cpu.bm=64x", "must be an integer"},
    };
    for (size_t i = 0; i < TSL_COUNTOF(bad); i++) {
        sched_options o = sched_options_defaults;
        tsl_diag d = {0};
        CHECK_EQ_INT(sched_options_parse(bad[i].text, &o, &d), TSL_ERR_ARG);
        CHECK_MSG(strstr(sb_str(&d.msg), bad[i].want), "'%s': %s", bad[i].text, sb_str(&d.msg));
        diag_free(&d);
    }
    sched_options o = sched_options_defaults;
    tsl_diag d = {0};
    CHECK(sched_options_parse(" contract.cpu.bm = 64 , contract.cpu.bm=48,cpu.threads=1 ", &o, &d) == TSL_OK);
    CHECK(o.cpu.bm == 48 && o.threads == 1); /* the last value of a key wins */
    diag_free(&d);
}

static void test_check_says_why(void)
{
    static const struct {
        const char *text;
        tsl_target t;
        const char *want;
    } bad[] = {
        {"contract.cpu.bm=64", TSL_TARGET_CPU, "not a whole number of 6x16 thread tiles"},
        {"contract.cpu.bm=48,contract.cpu.tm=6,contract.cpu.bn=16,contract.cpu.tn=16", TSL_TARGET_CPU,
         "not a multiple of 16"},
        {"contract.mma.bm=64,contract.mma.wm=8", TSL_TARGET_CUDA, "multiple of 16*wm"},
        {"contract.mma.bm=256,contract.mma.bn=256,contract.mma.bk=64,contract.mma.stages=4", TSL_TARGET_CUDA,
         "shared memory"},
        {"contract.fma.bm=32,contract.fma.bn=32,contract.fma.tm=8,contract.fma.tn=8", TSL_TARGET_CUDA, "16 threads"},
    };
    for (size_t i = 0; i < TSL_COUNTOF(bad); i++) {
        sched_options o = sched_options_defaults;
        tsl_diag d = {0};
        CHECK(sched_options_parse(bad[i].text, &o, &d) == TSL_OK);
        char why[256] = "";
        CHECK_MSG(sched_options_check(&o, bad[i].t, why, sizeof why) && strstr(why, bad[i].want), "'%s': '%s'",
                  bad[i].text, why);
        diag_free(&d);
    }
    /* a CPU-only problem is no reason to reject a GPU candidate */
    sched_options o = sched_options_defaults;
    o.cpu.bm = 64;
    char why[256];
    CHECK(!sched_options_check(&o, TSL_TARGET_CUDA, why, sizeof why));
}

/* Options reach the plan and the generator; a rejected candidate is an
 * error that says why, not another plan. */
static void test_options_change_the_plan(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    const char *src = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n";
    CHECK(tsl_program_compile(ctx, src, "mm.tc", NULL, &p) == TSL_OK);
    char *t = NULL;
    CHECK(tsl_program_emit(p, "tile:cpu", &t) == TSL_OK && strstr(t, "grid(cdiv(M, 96), cdiv(N, 128))"));
    free(t);
    CHECK(tsl_program_set_options(p, "contract.cpu.bm=64,contract.cpu.tm=4") == TSL_OK);
    CHECK_EQ_STR(tsl_program_options(p), "contract.cpu.bm=64,contract.cpu.tm=4");
    CHECK(tsl_program_emit(p, "tile:cpu", &t) == TSL_OK && strstr(t, "grid(cdiv(M, 64), cdiv(N, 128))"));
    free(t);
    CHECK(tsl_program_emit(p, "c", &t) == TSL_OK && strstr(t, "tsl_ukr"));
    free(t);
    CHECK(tsl_program_set_options(p, "cpu.micro_kernels=0") == TSL_OK);
    CHECK(tsl_program_emit(p, "c", &t) == TSL_OK && !strstr(t, "tsl_ukr"));
    free(t);
    CHECK(tsl_program_set_options(p, "sched.generic=1") == TSL_OK);
    CHECK(tsl_program_emit(p, "tile:cpu", &t) == TSL_OK && !strstr(t, "contract"));
    free(t);
    t = NULL;
    CHECK(tsl_program_set_options(p, "contract.cpu.tm=5") == TSL_OK);
    CHECK_EQ_INT(tsl_program_emit(p, "tile:cpu", &t), TSL_ERR_ARG);
    CHECK_MSG(strstr(tsl_context_error(ctx), "options rejected") && strstr(tsl_context_error(ctx), "5x16"), "%s",
              tsl_context_error(ctx));
    free(t);
    CHECK(tsl_program_set_options(p, "") == TSL_OK);
    CHECK_EQ_STR(tsl_program_options(p), "");
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* allow_tf32: a numerics switch beside the table (never searched), off by
 * default, in the canonical text (so the cache key) as a trailing
 * "allow_tf32=1", kept by set_options unless its text names it. */
static void test_allow_tf32(void)
{
    sched_options o = sched_options_defaults;
    CHECK(o.allow_tf32 == 0);
    tsl_diag d = {0};
    CHECK(sched_options_parse("contract.fma.bm=64, allow_tf32 = 1", &o, &d) == TSL_OK);
    strbuf b = {0};
    sched_options_text(&b, &o);
    CHECK_EQ_STR(sb_str(&b), "contract.fma.bm=64,allow_tf32=1");
    sched_options r = sched_options_defaults;
    CHECK(sched_options_parse(sb_str(&b), &r, &d) == TSL_OK && r.allow_tf32 == 1 && r.fma.bm == 64);
    sb_free(&b);
    CHECK(sched_options_parse("allow_tf32=2", &o, &d) == TSL_ERR_ARG);
    CHECK(strstr(sb_str(&d.msg), "allow_tf32=2") && strstr(sb_str(&d.msg), "0 or 1"));
    diag_free(&d);
    int n = 0;
    const sched_option *t = sched_option_table(&n);
    for (int i = 0; i < n; i++) CHECK(!strstr(t[i].key, "tf32")); /* the tuner never draws it */

    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    const char *src = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n";
    CHECK(tsl_program_compile(ctx, src, "mm.tc", NULL, &p) == TSL_OK);
    CHECK(!tsl_program_allow_tf32(p));
    CHECK(tsl_program_set_allow_tf32(p, 1) == TSL_OK && tsl_program_allow_tf32(p));
    CHECK_EQ_STR(tsl_program_options(p), "allow_tf32=1");
    CHECK(tsl_program_set_options(p, "contract.cpu.bm=64") == TSL_OK);
    CHECK_EQ_STR(tsl_program_options(p), "contract.cpu.bm=64,allow_tf32=1");
    CHECK(tsl_program_set_options(p, "") == TSL_OK);
    CHECK_EQ_STR(tsl_program_options(p), "allow_tf32=1");
    /* a run uses (and keys its executable by) the text with the switch;
     * on the CPU the result is exact f32 all the same */
    int64_t M = test_rand_int(1, 40), K = test_rand_int(1, 70), N = test_rand_int(1, 40);
    int64_t sa[2] = {M, K}, sb2[2] = {K, N};
    DLTensor *A = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sa), *B = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sb2);
    for (int64_t i = 0; i < M * K; i++) ((float *)A->data)[i] = (float)test_rand_double(-1, 1);
    for (int64_t i = 0; i < K * N; i++) ((float *)B->data)[i] = (float)test_rand_double(-1, 1);
    tsl_args *a = tsl_args_create(p);
    CHECK(tsl_args_set_tensor(a, "A", A) == TSL_OK && tsl_args_set_tensor(a, "B", B) == TSL_OK);
    CHECK(tsl_program_run(p, a, TSL_TARGET_CPU) == TSL_OK);
    CHECK_EQ_STR(tsl_args_options_used(a, NULL), "allow_tf32=1");
    const DLTensor *C = tsl_args_output(a, "C");
    for (int64_t i = 0; C && i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double want = 0;
            for (int64_t k = 0; k < K; k++)
                want += (double)((float *)A->data)[i * K + k] * ((float *)B->data)[k * N + j];
            double got = ((const float *)C->data)[i * N + j];
            CHECK_MSG(fabs(got - want) <= 1e-5 * (1 + fabs(want)), "C[%lld,%lld] = %.9g, want %.9g", (long long)i,
                      (long long)j, got, want);
        }
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    CHECK(tsl_program_set_options(p, "allow_tf32=0") == TSL_OK && !tsl_program_allow_tf32(p));
    CHECK_EQ_STR(tsl_program_options(p), "");
    CHECK(tsl_program_set_allow_tf32(NULL, 1) == TSL_ERR_ARG);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* Random candidates the check accepts compute what the interpreter does
 * (matmul on the CPU at sizes that are not tile multiples). */
static void test_valid_candidates_run(void)
{
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    const char *src = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n";
    CHECK(tsl_program_compile(ctx, src, "mm.tc", NULL, &p) == TSL_OK);
    int64_t M = test_rand_int(1, 70), K = test_rand_int(1, 300), N = test_rand_int(1, 150);
    int64_t sa[2] = {M, K}, sb[2] = {K, N};
    DLTensor *A = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sa), *B = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sb);
    for (int64_t i = 0; i < M * K; i++) ((float *)A->data)[i] = (float)test_rand_double(-1, 1);
    for (int64_t i = 0; i < K * N; i++) ((float *)B->data)[i] = (float)test_rand_double(-1, 1);
    tsl_args *ref = tsl_args_create(p);
    CHECK(tsl_args_set_tensor(ref, "A", A) == TSL_OK && tsl_args_set_tensor(ref, "B", B) == TSL_OK);
    CHECK(tsl_program_run(p, ref, TSL_TARGET_INTERP) == TSL_OK);
    const DLTensor *R = tsl_args_output(ref, "C");
    int ran = 0;
    for (int tries = 0; tries < 200 && ran < 3; tries++) {
        sched_options o;
        random_candidate(&o);
        o.generic = 0;
        char why[256];
        if (sched_options_check(&o, TSL_TARGET_CPU, why, sizeof why)) continue;
        strbuf text = {0};
        sched_options_text(&text, &o);
        CHECK(tsl_program_set_options(p, sb_str(&text)) == TSL_OK);
        tsl_args *a = tsl_args_create(p);
        CHECK(tsl_args_set_tensor(a, "A", A) == TSL_OK && tsl_args_set_tensor(a, "B", B) == TSL_OK);
        tsl_status st = tsl_program_run(p, a, TSL_TARGET_CPU);
        CHECK_MSG(st == TSL_OK, "%s: %s", sb_str(&text), tsl_context_error(ctx));
        const DLTensor *C = st ? NULL : tsl_args_output(a, "C");
        int bad = 0;
        for (int64_t i = 0; C && i < M * N && bad < 3; i++) {
            double x = ((const float *)C->data)[i], y = ((const float *)R->data)[i];
            if (!(fabs(x - y) <= 1e-4 * (1 + fabs(y)))) {
                bad++;
                CHECK_MSG(0, "%s, %lldx%lldx%lld: C[%lld] = %g, reference %g", sb_str(&text), (long long)M,
                          (long long)K, (long long)N, (long long)i, x, y);
            }
        }
        ran++;
        sb_free(&text);
        tsl_args_free(a);
    }
    CHECK(ran == 3);
    tsl_args_free(ref);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_program_free(p);
    tsl_context_free(ctx);
}

/* Files under dir (recursively) that call getenv, other than the one
 * place the API reads the environment (src/api/env.c), into *bad. */
static int scan_getenv(const char *dir, strbuf *bad)
{
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t l = strlen(e->d_name);
        if (l > 2 && (!strcmp(e->d_name + l - 2, ".c") || !strcmp(e->d_name + l - 2, ".h"))) {
            files++;
            if (strstr(path, "/src/api/env.c")) continue;
            FILE *f = fopen(path, "r");
            char line[4096];
            for (int n = 1; f && fgets(line, sizeof line, f); n++)
                if (strstr(line, "getenv(")) sb_printf(bad, " %s:%d", path, n);
            if (f) fclose(f);
        } else if (!strchr(e->d_name, '.')) {
            files += scan_getenv(path, bad);
        }
    }
    closedir(dp);
    return files;
}

/* Tuning spaces are data: no strategy, pass or generator reads an
 * environment variable (the CLI and the API pass options; the API's
 * own variables are read in src/api/env.c alone). */
static void test_library_reads_no_environment(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/src", test_root());
    strbuf bad = {0};
    int files = scan_getenv(dir, &bad);
    CHECK_MSG(files > 100, "only %d source files under %s", files, dir);
    CHECK_MSG(!bad.len, "getenv outside src/api/env.c:%s", sb_str(&bad));
    sb_free(&bad);
}

TEST_SUITE(options) = {
    {"defaults_and_round_trip", test_defaults_and_round_trip},
    {"parse_errors", test_parse_errors},
    {"allow_tf32", test_allow_tf32},
    {"check_says_why", test_check_says_why},
    {"options_change_the_plan", test_options_change_the_plan},
    {"valid_candidates_run", test_valid_candidates_run},
    {"library_reads_no_environment", test_library_reads_no_environment},
    {0, 0},
};
